"""npuc.compile: the compiled file, its summary, per-operation estimate and cycles."""

import numpy as np
import pytest

import npuc
from conftest import MODELS, goldens

CONV = MODELS / "tflite" / "conv2d_3x3_relu.tflite"

SUMMARY_KEYS = {
    "accelerator",
    "system_config",
    "memory_mode",
    "optimise",
    "npu_segments",
    "npu_operators",
    "cpu_operators",
    "operators",
    "npu_operations",
    "kernel_commands",
    "dma_commands",
    "command_words",
    "arena_bytes",
    "arena_bytes_total",
    "fast_memory_bytes",
    "read_only_bytes",
    "weights_raw_bytes",
    "weights_encoded_bytes",
    "scale_bytes",
    "estimated_cycles",
    "compute_bound",
}


def test_a_tflite_model_compiles_to_a_vela_format_tflite_with_its_summary():
    m = npuc.compile(CONV)
    assert m.data[4:8] == b"TFL3"
    assert set(m.summary) == SUMMARY_KEYS
    s = m.summary
    assert (s["accelerator"], s["system_config"], s["memory_mode"], s["optimise"]) == (
        "ethos-u85-256",
        "Ethos_U85_SYS_DRAM_Mid",
        "Dedicated_Sram_384KB",
        "performance",
    )
    assert s["operators"] == [
        {"index": 0, "opcode": "CONV_2D", "placement": "npu", "segment": 0, "reason": None}
    ]
    assert m.cpu_operators == []
    assert s["weights_raw_bytes"] > 0 and s["weights_encoded_bytes"] > 0
    assert m.cycles == s["estimated_cycles"] > 0
    assert 0 < s["compute_bound"] <= s["estimated_cycles"]


def test_bytes_and_a_path_give_the_same_file():
    assert npuc.compile(CONV.read_bytes()).data == npuc.compile(str(CONV)).data


def test_layers_are_npuc_reports_operations():
    m = npuc.compile(CONV)
    kernels = [l for l in m.layers if l["instruction"].startswith("NPU_OP_CONV")]
    assert len(kernels) == m.summary["kernel_commands"]
    for key in ("cycles", "macs", "stream", "offset", "start_cycle", "sram_read_bytes"):
        assert key in m.layers[0]
    # The whole stream ends when its last operation does.
    assert max(l["start_cycle"] + l["cycles"] for l in m.layers) == m.cycles
    assert sum(l["macs"] for l in m.layers) > 0


@pytest.mark.parametrize("output", ["tflite", "container", "raw"])
def test_per_layer_has_one_row_per_source_operator(output):
    m = npuc.compile(MODELS / "tflite" / "mobilenet_tiny.tflite", output=output)
    rows = m.per_layer
    assert [r["index"] for r in rows] == [o["index"] for o in m.npu_operators]
    assert rows[0]["operator"] == "CONV_2D" and rows[-1]["operator"] == "SOFTMAX"
    # The rows add up to the model's cycles and to every command's MACs.
    assert sum(r["cycles"] for r in rows) == m.cycles
    assert sum(r["macs"] for r in rows) == sum(l["macs"] for l in m.layers)
    assert sum(r["commands"] for r in rows) == len(m.layers)
    assert 0 < rows[0]["mac_utilisation"] <= 100


def test_per_layer_has_no_row_for_operators_on_the_cpu():
    m = npuc.compile(MODELS / "float" / "tflite" / "layernorm.tflite")
    cpu = {o["index"] for o in m.cpu_operators}
    rows = m.per_layer
    assert rows and not cpu & {r["index"] for r in rows}
    assert sum(r["cycles"] for r in rows) == m.cycles


def test_the_configuration_options_reach_the_compiler():
    m = npuc.compile(
        CONV,
        accelerator="ethos-u85-512",
        system_config="Ethos_U85_SYS_Flash_High",
        memory_mode="Sram_Only",
        optimise="Size",
        output="container",
    )
    assert m.data[:4] == b"NPUC"
    s = m.summary
    assert (s["accelerator"], s["system_config"], s["memory_mode"], s["optimise"]) == (
        "ethos-u85-512",
        "Ethos_U85_SYS_Flash_High",
        "Sram_Only",
        "size",
    )


def test_a_vela_ini_adds_system_configurations(tmp_path):
    ini = tmp_path / "my.ini"
    ini.write_text(
        "[System_Config.My_System]\n"
        "core_clock=500e6\n"
        "axi0_port=Sram\n"
        "axi1_port=OffChipFlash\n"
        "Sram_clock_scale=1.0\n"
        "Sram_burst_length=32\n"
        "Sram_read_latency=32\n"
        "Sram_write_latency=32\n"
        "OffChipFlash_clock_scale=0.25\n"
        "OffChipFlash_burst_length=128\n"
        "OffChipFlash_read_latency=64\n"
        "OffChipFlash_write_latency=64\n"
    )
    m = npuc.compile(CONV, system_config="My_System", memory_mode="Sram_Only", config=ini)
    assert m.summary["system_config"] == "My_System"


@pytest.mark.parametrize("name", ["conv2d_3x3_relu", "mobilenet_tiny", "softmax"])
def test_a_compiled_tflite_runs_bit_exact_against_the_tflite_goldens(name):
    m = npuc.compile(MODELS / "tflite" / f"{name}.tflite")
    for inputs, expected in goldens(f"golden/{name}"):
        outputs = npuc.run(m.data, inputs)
        assert len(outputs) == len(expected)
        for o, e in zip(outputs, expected):
            assert o.dtype == e.dtype and o.shape == e.shape
            np.testing.assert_array_equal(o, e)


def test_a_container_runs_bit_exact_too():
    m = npuc.compile(MODELS / "tflite" / "mobilenet_tiny.tflite", output="container")
    for inputs, expected in goldens("golden/mobilenet_tiny"):
        np.testing.assert_array_equal(npuc.run(m, inputs)[0], expected[0])


def test_operators_left_on_the_cpu_are_listed_and_run_on_the_interpreter():
    # A LayerNormalization with a float island (DEQUANTIZE -> ... -> QUANTIZE) on the CPU.
    m = npuc.compile(MODELS / "float" / "tflite" / "layernorm.tflite")
    cpu = m.cpu_operators
    assert cpu and all(o["reason"] for o in cpu)
    assert m.summary["cpu_operators"] == len(cpu)
    assert m.summary["npu_operators"] == len(m.npu_operators) > 0
    for inputs, expected in goldens("float/golden/layernorm"):
        for o, e in zip(npuc.run(m.data, inputs), expected):
            np.testing.assert_array_equal(o, e)


def test_a_plain_model_runs_on_the_reference_interpreter():
    for inputs, expected in goldens("golden/conv2d_3x3_relu"):
        np.testing.assert_array_equal(npuc.run(CONV, inputs)[0], expected[0])


def test_verify_compares_the_simulator_with_the_interpreter():
    r = npuc.verify(MODELS / "tflite" / "mobilenet_tiny.tflite", samples=2, seed=7)
    assert r["bit_exact"] is True
    (part,) = r["parts"]
    assert part["part"] == "whole graph"
    assert part["samples"] == 2 and part["bytes_compared"] == 2 * 10
    assert part["mismatches"] == [] and part["divergence"] is None
    assert part["description"].startswith("bit-exact")


def test_verify_checks_each_npu_segment_of_a_model_with_cpu_operators():
    r = npuc.verify(MODELS / "float" / "tflite" / "layernorm.tflite", samples=1)
    assert r["bit_exact"] is True
    assert len(r["parts"]) == 2
    assert all(p["part"].startswith("segment ") and p["bytes_compared"] > 0 for p in r["parts"])


def test_disasm_lists_the_command_stream():
    text = npuc.disasm(npuc.compile(CONV).data)
    assert "NPU_OP_CONV" in text and "NPU_OP_STOP" in text


def test_compilation_is_deterministic():
    a = npuc.compile(MODELS / "tflite" / "mobilenet_tiny.tflite")
    b = npuc.compile(MODELS / "tflite" / "mobilenet_tiny.tflite")
    assert a.data == b.data and a.summary == b.summary and a.layers == b.layers
