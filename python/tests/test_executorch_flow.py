"""npuc in place of Vela in an ExecuTorch-style flow: the Arm backend hands over TOSA bytes,
gets the compiled artifact back in-process, runs it and compares with the reference."""

import numpy as np
import pytest

import npuc
from conftest import MODELS, goldens


@pytest.mark.parametrize(
    "name", ["conv2d_3x3_relu", "resnet8", "transformer_encoder", "tosa_conv2d_i16"]
)
def test_tosa_bytes_in_compiled_run_and_equal_to_the_tosa_reference_model(name):
    tosa = (MODELS / "tosa" / f"{name}.tosa").read_bytes()  # what ExecuTorch would hand over
    # INTEGRATION POINT (issue 15): ExecuTorch reads Vela's raw .npz (output="raw"); until
    # npuc's .npz writer is merged the flow uses npuc's container, which holds the same
    # command stream and regions.
    m = npuc.compile(tosa, accelerator="ethos-u85-256", output="container")
    assert m.cpu_operators == [] and m.summary["npu_segments"] == 1
    assert m.cycles > 0 and m.layers
    for inputs, expected in goldens(f"golden-tosa/{name}"):
        outputs = npuc.run(m.data, inputs)
        assert len(outputs) == len(expected)
        for o, e in zip(outputs, expected):
            assert o.dtype == e.dtype and o.shape == e.shape
            np.testing.assert_array_equal(o, e)


def test_the_reference_interpreter_agrees_on_tosa_too():
    tosa = (MODELS / "tosa" / "resnet8.tosa").read_bytes()
    for inputs, expected in goldens("golden-tosa/resnet8"):
        np.testing.assert_array_equal(npuc.run(tosa, inputs)[0], expected[0])


def test_raw_output_is_velas_npz_with_the_same_command_stream(tmp_path):
    # ExecuTorch's Arm backend reads Vela's raw .npz: the command stream, the weights and the
    # tensor layout as arrays.
    tosa = (MODELS / "tosa" / "conv2d_3x3_relu.tosa").read_bytes()
    raw = npuc.compile(tosa, accelerator="ethos-u85-256", output="raw")
    path = tmp_path / "conv2d_3x3_relu_vela.npz"
    path.write_bytes(raw.data)
    with np.load(path, allow_pickle=True) as z:
        for key in ["cmd_data", "weight_data", "scratch_size", "input_shape", "output_shape"]:
            assert key in z.files, key
        cmd = z["cmd_data"]
    container = npuc.compile(tosa, accelerator="ethos-u85-256", output="container")
    # The same stream as the container's (the disassembly lists its commands).
    assert cmd.size > 0 and raw.cycles == container.cycles
