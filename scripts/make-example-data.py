#!/usr/bin/env python3
"""Writes the example operands of `scripts/demo`: A (64×512) and B (512×48), float32 .npy
files holding bf16-representable values (standard normal, rounded to bf16 by truncating
to 8 significant bits after round-to-nearest-even). Python standard library only."""
import random
import struct
import sys
from pathlib import Path


def bf16_round(x):
    """Round a float32 value to bf16 (RNE) and return it as a Python float."""
    u = struct.unpack("<I", struct.pack("<f", x))[0]
    u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("<f", struct.pack("<I", u))[0]


def write_npy(path, rows, cols, values):
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, cols)
    pad = 64 - (10 + len(header) + 1) % 64
    header = header + " " * pad + "\n"
    with open(path, "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode("latin1"))
        f.write(struct.pack("<%df" % len(values), *values))


def main():
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "examples/data")
    out.mkdir(parents=True, exist_ok=True)
    rng = random.Random(2026)
    m, k, n = 64, 512, 48
    a = [bf16_round(rng.gauss(0, 1)) for _ in range(m * k)]
    b = [bf16_round(rng.gauss(0, 1)) for _ in range(k * n)]
    write_npy(out / "a.npy", m, k, a)
    write_npy(out / "b.npy", k, n, b)


if __name__ == "__main__":
    main()
