#!/usr/bin/env python3
"""Writes the saturating-output golden-test inputs (run in tests/cli/data): A (4x8) and B (8x3),
bf16 values in float32 containers, for --in bf16 --out fp8_e4m3 --saturate. Row i of A is
2^(i+1) times small integers, B small integers: the exact results run from tens to a few
thousand, so some lie beyond E4M3's largest value 448 (saturated to 448 under --saturate, NaN
under IEEE's overflow) and some inside. Python standard library only; seeded."""
import struct, random
random.seed(20261204)
M, K, N = 4, 8, 3
def npy(path, shape, vals):
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % ', '.join(map(str, shape))
    pad = 64 - (10 + len(h) + 1) % 64; h = h + ' ' * pad + '\n'
    open(path, 'wb').write(b"\x93NUMPY\x01\x00" + struct.pack('<H', len(h)) + h.encode() + struct.pack('<%df' % len(vals), *vals))
A = [[random.randint(-3, 7) * 2.0 ** (i + 1) for _ in range(K)] for i in range(M)]
B = [[float(random.randint(-2, 9)) for _ in range(N)] for _ in range(K)]
npy("saturate_a.npy", (M, K), [v for r in A for v in r])
npy("saturate_b.npy", (K, N), [v for r in B for v in r])
for i in range(M):
    print([sum(A[i][k] * B[k][j] for k in range(K)) for j in range(N)])
