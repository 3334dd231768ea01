"""npuc: an open, fast, verifiable compiler for the Arm Ethos-U85 NPU.

    import npuc
    m = npuc.compile("model.tflite", accelerator="ethos-u85-256")
    m.data            # the Vela-format .tflite (bytes)
    m.summary         # the compile summary (dict; as `npuc compile --json`)
    m.layers          # per command: cycles, MACs, memory traffic (as `npuc report --json`)
    m.per_layer       # per source operator (as `npuc report --per-layer --json`'s layers)
    m.cycles          # estimated cycles
    m.cpu_operators   # the operators left on the CPU, with the reason
    outputs = npuc.run(m.data, [x])  # on the bundled simulator (CPU operators interpreted)

Every failure raises NpucError with the message the `npuc` command line prints.
"""

import importlib.metadata
import json
import os

import numpy as np

from . import _native
from ._native import NpucError

__all__ = ["CompiledModel", "NpucError", "compile", "disasm", "run", "verify"]

__version__ = importlib.metadata.version("npuc")

OUTPUTS = ("tflite", "container", "raw")


def _model(model):
    """(bytes, path) for a model given as bytes-like or as a path."""
    if isinstance(model, (bytes, bytearray, memoryview)):
        return bytes(model), None
    if isinstance(model, (str, os.PathLike)):
        return None, os.fspath(model)
    raise TypeError(f"model must be bytes or a path, not {type(model).__name__}")


def _bytes(artifact):
    """The bytes of an artifact given as bytes-like, a path or a CompiledModel."""
    if isinstance(artifact, CompiledModel):
        return artifact.data
    data, path = _model(artifact)
    if data is not None:
        return data
    try:
        with open(path, "rb") as f:
            return f.read()
    except OSError as e:
        raise NpucError(f"reading {path}: {e.strerror}") from e


class CompiledModel:
    """A compiled model: the file (`data`), its summary and its per-operation estimate."""

    def __init__(self, data, summary, layers, cycles, output, per_layer=None):
        #: The compiled file: a Vela-format .tflite, an npuc container, or Vela's raw .npz.
        self.data = data
        #: The compile summary (the JSON of `npuc compile --json`).
        self.summary = summary
        #: Per command (kernel or DMA), as `npuc report --json`'s `ops`.
        self.layers = layers
        #: Estimated cycles of the whole model (npuc report's model).
        self.cycles = cycles
        #: The output format: "tflite", "container" or "raw".
        self.output = output
        #: Per source operator on the NPU, in execution order (dicts: index, operator,
        #: output, cycles, macs, mac_utilisation, bytes per memory, ...), as
        #: `npuc report --per-layer --json`'s `layers`; the rows' cycles add up to `cycles`.
        self.per_layer = per_layer if per_layer is not None else []

    @property
    def cpu_operators(self):
        """The source operators left on the CPU (dicts with index, opcode and reason)."""
        return [o for o in self.summary["operators"] if o["placement"] == "cpu"]

    @property
    def npu_operators(self):
        """The source operators on the NPU (dicts with index, opcode and segment)."""
        return [o for o in self.summary["operators"] if o["placement"] == "npu"]

    def save(self, path):
        """Writes `data` to `path`."""
        with open(path, "wb") as f:
            f.write(self.data)

    def __repr__(self):
        s = self.summary
        return (
            f"<npuc.CompiledModel {self.output} {len(self.data)} bytes for "
            f"{s['accelerator']}: {s['npu_operators']} operators on NPU, "
            f"{s['cpu_operators']} on CPU, {self.cycles} cycles>"
        )


def _target(accelerator, system_config, memory_mode, config, optimise):
    """The target options as the native module takes them: one dict."""
    return {
        "accelerator": accelerator,
        "system_config": system_config,
        "memory_mode": memory_mode,
        "config": None if config is None else os.fspath(config),
        "optimise": optimise,
    }


def compile(
    model,
    accelerator="ethos-u85-256",
    system_config=None,
    memory_mode=None,
    config=None,
    optimise="performance",
    output="tflite",
):
    """Compiles a .tflite or .tosa model (bytes or a path) for one Ethos-U85 configuration.

    accelerator: ethos-u85-128, -256, -512, -1024 or -2048. system_config, memory_mode:
    Vela's vela.ini names (built-in presets, or sections of `config`, a Vela-format .ini
    path); None gives npuc's defaults. optimise: "performance" or "size". output: "tflite"
    (Vela's format: operators the NPU cannot run stay on the CPU), "container" (npuc's
    container: the whole model on the NPU) or "raw" (Vela's .npz).
    """
    if output not in OUTPUTS:
        raise NpucError(f"unknown output {output!r} (tflite, container or raw)")
    data, path = _model(model)
    target = _target(accelerator, system_config, memory_mode, config, optimise)
    blob, summary, layers, cycles, per_layer = _native.compile(data, path, target, output)
    return CompiledModel(
        blob, json.loads(summary), json.loads(layers), cycles, output, json.loads(per_layer)
    )


def _triple(k, a):
    a = np.ascontiguousarray(a)
    if a.dtype.byteorder == ">":
        a = a.astype(a.dtype.newbyteorder("<"))
    descr = np.lib.format.dtype_to_descr(a.dtype)
    if not isinstance(descr, str):
        raise NpucError(f"input {k}: arrays of dtype {a.dtype} are not supported")
    return descr, list(a.shape), a.tobytes()


def run(artifact, inputs):
    """Runs a compiled model (an npuc container or a Vela-format .tflite, as bytes or a path)
    on the bundled simulator, operators left on the CPU on the reference interpreter; a plain
    .tflite / .tosa runs on the reference interpreter. `inputs` are numpy arrays in the
    graph's input order (dtype and shape as the graph's); returns the outputs."""
    data = _bytes(artifact)
    if isinstance(inputs, np.ndarray) or not isinstance(inputs, (list, tuple)):
        raise NpucError("inputs must be a list of numpy arrays, one per graph input")
    triples = [_triple(k, a) for k, a in enumerate(inputs)]
    outputs = _native.run(data, triples)
    return [np.frombuffer(b, dtype=np.dtype(d)).reshape(s).copy() for d, s, b in outputs]


def verify(
    model,
    accelerator="ethos-u85-256",
    system_config=None,
    memory_mode=None,
    config=None,
    optimise="performance",
    samples=3,
    seed=1,
):
    """Compiles a model and runs `samples` seeded random full-range inputs through the
    simulator and the reference interpreter, comparing every output byte (as `npuc verify`).
    Returns a dict: `bit_exact`, and `parts` (the whole graph, or each NPU segment of a
    TFLite model with CPU operators) with their samples, bytes compared, mismatches and the
    first diverging NPU operation."""
    data, path = _model(model)
    target = _target(accelerator, system_config, memory_mode, config, optimise)
    return json.loads(_native.verify(data, path, target, samples, seed))


def disasm(artifact):
    """The disassembly (text, as `npuc disasm`) of every command stream of a compiled
    artifact: an npuc container, a Vela-compiled .tflite, a COP1/COP2 payload or a raw stream."""
    return _native.disasm(_bytes(artifact))
