#!/usr/bin/env python3
"""Writes the NVFP4 operands of the golden case check_matmul_profile_b200_nvfp4 (no numpy:
.npy v1.0 headers by hand): A 4x32 and B 32x3 of fp4_e2m1 patterns (uint8), their E4M3 block
scales per 1x16 (uint8 patterns: A 4x2, B 2x3), from a fixed linear congruential sequence."""
import os

here = os.path.dirname(os.path.abspath(__file__))


def npy_u8(name, rows, cols, values):
    header = "{'descr': '|u1', 'fortran_order': False, 'shape': (%d, %d), }" % (rows, cols)
    header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
    with open(os.path.join(here, name), "wb") as f:
        f.write(b"\x93NUMPY\x01\x00" + len(header).to_bytes(2, "little") + header.encode() + bytes(values))


state = 12345


def draw(n):
    global state
    out = []
    for _ in range(n):
        state = (state * 1103515245 + 12345) % 2**31
        out.append(state >> 16)
    return out


npy_u8("nvfp4_a.npy", 4, 32, [x % 16 for x in draw(4 * 32)])           # any E2M1 pattern (no NaN/inf)
npy_u8("nvfp4_b.npy", 32, 3, [x % 16 for x in draw(32 * 3)])
npy_u8("nvfp4_sa.npy", 4, 2, [0x30 + x % 24 for x in draw(4 * 2)])    # E4M3 0x30..0x47: 0.5 .. 3.75
npy_u8("nvfp4_sb.npy", 2, 3, [0x30 + x % 24 for x in draw(2 * 3)])
