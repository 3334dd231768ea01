#!/usr/bin/env python3
"""The committed fixtures of Vela 5.2 on TOSA conformance tests (models/vela-conformance/),
pinned by tests/tests/sim_vela_goldens.rs: the cases of models/scripts/vela_conformance.py
where the simulator disagreed with the TOSA reference model (docs/decisions.md simulator
#45, #46) or `npuc run` refused Vela's file.

    python make_vela_conformance_fixtures.py CONFORMANCE_DIR

Run it with a Python that has ethos-u-vela==5.2.0. For each test in FIXTURES it compiles
CONFORMANCE_DIR/<set>/operators/<test>/test.tosa for ethos-u85-256 with Vela's default
options and writes models/vela-conformance/<set>__<leaf>/: test_vela.tflite, desc.json and the
test's input-*.npy and result-*.npy (the reference model's results).
"""
import os
import shutil
import sys
import tempfile

MODELS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
OUT = os.path.join(MODELS, "vela-conformance")

FIXTURES = [
    # #45: RESIZE bilinear int16 -> int48 whose acc << 16 exceeds 48 bits (the simulator refused).
    ("ext-int16", "image/resize/resize_1x23x63x10_i16_modeB_outi48_sc1660x14141x1922x788_off2177x12444_bor-20202x1236"),
    # #46: ARGMAX windows whose maximum is <= 0 (Vela's stream, by the PC, gives -32768).
    ("pro-int", "tensor/argmax/argmax_60_i8_outi32_axis0_is_s1"),
    ("pro-int", "tensor/argmax/argmax_8x3x8x2x4_i8_outi32_axis4"),
    ("ext-int16", "tensor/argmax/argmax_49_i16_outi32_axis0_is_s1"),
    ("ext-int16", "tensor/argmax/argmax_3x2x9x5x2x5_i16_outi32_axis3"),
    # `npuc run`: a graph input Vela gives no arena offset (every tap of the convolution falls
    # in the padding, so no operator reads it) is checked and not used.
    ("ext-int4", "tensor/conv2d_8192x2/conv2d_8192x2_1x3x3x2_i8xi4_acci32_st8192x8192_pad8189x8192x8189x4097_dilat1x4096_lclbnd0"),
]


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    root = sys.argv[1]
    from ethosu.vela import vela

    for set_name, test in FIXTURES:
        src = os.path.join(root, set_name, "operators", test)
        dst = os.path.join(OUT, f"{set_name}__{os.path.basename(test)}")
        os.makedirs(dst, exist_ok=True)
        with tempfile.TemporaryDirectory() as tmp:
            rc = vela.main([os.path.join(src, "test.tosa"), "--accelerator-config", "ethos-u85-256", "--output-dir", tmp])
            if rc:
                sys.exit(f"{test}: Vela exit status {rc}")
            shutil.copy(os.path.join(tmp, "test_vela.tflite"), os.path.join(dst, "test_vela.tflite"))
        for f in sorted(os.listdir(src)):
            if f == "desc.json" or (f.endswith(".npy") and (f.startswith("input-") or f.startswith("result-"))):
                shutil.copy(os.path.join(src, f), os.path.join(dst, f))
        print(dst)


if __name__ == "__main__":
    main()
