"""Failures raise npuc.NpucError with the message of the command line."""

import subprocess

import numpy as np
import pytest

import npuc
from conftest import MODELS, npuc_cli

CONV = MODELS / "tflite" / "conv2d_3x3_relu.tflite"


def test_an_unknown_system_configuration_lists_the_valid_names():
    with pytest.raises(npuc.NpucError, match='unknown system configuration "Nope"; valid names: .*Ethos_U85_SYS_DRAM_Mid'):
        npuc.compile(CONV, system_config="Nope")


def test_an_unknown_accelerator_optimisation_or_output_is_an_error():
    with pytest.raises(npuc.NpucError, match="ethos-u85-100"):
        npuc.compile(CONV, accelerator="ethos-u85-100")
    with pytest.raises(npuc.NpucError, match="performance or size"):
        npuc.compile(CONV, optimise="fastest")
    with pytest.raises(npuc.NpucError, match="tflite, container or raw"):
        npuc.compile(CONV, output="elf")


def test_a_missing_file_is_named():
    with pytest.raises(npuc.NpucError, match="reading /no/such/model.tflite"):
        npuc.compile("/no/such/model.tflite")
    with pytest.raises(npuc.NpucError, match="reading /no/such/model.bin"):
        npuc.run("/no/such/model.bin", [])


def test_garbage_is_an_error_not_a_crash():
    with pytest.raises(npuc.NpucError, match="compiling the model for ethos-u85-256"):
        npuc.compile(b"\x00" * 64)
    with pytest.raises(npuc.NpucError):
        npuc.run(b"NPUC" + b"\xff" * 60, [])
    with pytest.raises(npuc.NpucError):
        npuc.disasm(b"\x01\x02\x03")


def test_wrong_inputs_name_the_input():
    m = npuc.compile(CONV)
    with pytest.raises(npuc.NpucError, match="input 0"):
        npuc.run(m.data, [np.zeros((1, 2, 2, 3), np.int8)])
    with pytest.raises(npuc.NpucError, match="the graph has 1 inputs, 0 given"):
        npuc.run(m.data, [])
    with pytest.raises(npuc.NpucError, match="a list of numpy arrays"):
        npuc.run(m.data, np.zeros((1, 12, 12, 3), np.int8))


def test_a_container_of_a_model_with_cpu_operators_lists_them():
    with pytest.raises(npuc.NpucError, match="cannot run on the NPU") as e:
        npuc.compile(MODELS / "float" / "tflite" / "layernorm.tflite", output="container")
    assert "operator " in str(e.value)


def test_a_tflite_output_of_a_tosa_model_is_one_ethos_u_operator():
    m = npuc.compile(MODELS / "tosa" / "conv2d_3x3_relu.tosa")
    assert m.data[4:8] == b"TFL3" and m.cpu_operators == []


@pytest.mark.skipif(npuc_cli() is None, reason="NPUC_BIN (the npuc executable) not set")
@pytest.mark.parametrize(
    "args, kwargs",
    [
        (["--system-config", "Nope"], {"system_config": "Nope"}),
        (["--memory-mode", "Nope"], {"memory_mode": "Nope"}),
    ],
)
def test_the_message_is_the_command_lines(tmp_path, args, kwargs):
    cli = subprocess.run(
        [npuc_cli(), "compile", str(CONV), "-o", str(tmp_path / "x.tflite"), *args],
        capture_output=True,
        text=True,
    )
    assert cli.returncode == 1
    with pytest.raises(npuc.NpucError) as e:
        npuc.compile(CONV, **kwargs)
    assert cli.stderr.strip() == f"npuc: error: {e.value}"


@pytest.mark.skipif(npuc_cli() is None, reason="NPUC_BIN (the npuc executable) not set")
def test_a_compile_error_is_the_command_lines(tmp_path):
    model = MODELS / "float" / "tflite" / "layernorm.tflite"
    cli = subprocess.run(
        [npuc_cli(), "compile", str(model), "-o", str(tmp_path / "x.bin")],
        capture_output=True,
        text=True,
    )
    assert cli.returncode == 1
    with pytest.raises(npuc.NpucError) as e:
        npuc.compile(model, output="container")
    assert cli.stderr.strip() == f"npuc: error: {e.value}"
