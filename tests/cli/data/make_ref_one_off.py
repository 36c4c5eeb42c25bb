#!/usr/bin/env python3
"""Writes ref_one_off.npy (run in tests/cli/data): examples/data/c_sequential_fp32acc.npy (the
cpu-sequential platform's bf16 output of examples' A·B, bf16 patterns in a uint16 container) with
element 7 moved up by 2 bf16 ulps: a proven defect under its own claim (--profile
cpu-sequential), yet within the any-order bf16-accumulator bound of c_bf16acc.npy. The golden
check_matmul_ref_is_itself_a_defect judges that port. Python standard library only."""
import struct
src = open("../../../examples/data/c_sequential_fp32acc.npy", "rb").read()
header_len = struct.unpack("<H", src[8:10])[0]
start = 10 + header_len
assert b"'<u2'" in src[10:start], "expected a uint16 .npy file"
i = start + 2 * 7
v = struct.unpack("<H", src[i:i + 2])[0]
open("ref_one_off.npy", "wb").write(src[:i] + struct.pack("<H", v + 2) + src[i + 2:])
