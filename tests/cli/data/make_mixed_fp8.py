#!/usr/bin/env python3
"""Writes the mixed-fp8 golden-test inputs (run in tests/cli/data): A (8x256, values of OCP E4M3)
and B (256x8, values of E5M2), both as float32 containers, for the claim
--in fp8_e4m3 --in-b fp8_e5m2 (FP8 training's backward GEMM: E5M2 gradients x E4M3 weights).
Row 0 of A and column 0 of B are 1 followed by 255 times 2^-6: element (0, 0) is
1 + 255 * 2^-12 = 1.062255859375 exactly, which a 13-bit tensor-core window keeps and an fp16
accumulator loses (each 2^-12 is below half an ulp of 1 in fp16: the sum stays 1).
The other entries are random values of each format (sign, exponent, mantissa drawn field by
field, |A| in 2^-3 .. 2^1, |B| in 2^-4 .. 2^0); at k = 10 rows 1-7 of A hold +-448 (E4M3's
largest) against +-2^-16 (E5M2's least subnormal) in columns 1-7 of B, at k = 11 +-2^-9 (E4M3's
least subnormal) against +-57344 (E5M2's largest): every sum stays within fp16's range, so an fp16
accumulator errs by rounding, not by overflow.
Python standard library only; seeded."""
import struct, random
random.seed(20261203)
M, K, N = 8, 256, 8
def npy(path, shape, vals):
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % ', '.join(map(str, shape))
    pad = 64 - (10 + len(h) + 1) % 64; h = h + ' ' * pad + '\n'
    open(path, 'wb').write(b"\x93NUMPY\x01\x00" + struct.pack('<H', len(h)) + h.encode() + struct.pack('<%df' % len(vals), *vals))
def value(mbits, bias, lo, hi):  # a normal value with a biased exponent in [lo, hi]
    e = random.randint(lo, hi) - bias
    m = random.randint(0, 2**mbits - 1)
    return (-1) ** random.randint(0, 1) * (1 + m / 2**mbits) * 2.0**e
sign = lambda: (-1) ** random.randint(0, 1)
A = [[value(3, 7, 4, 8) for _ in range(K)] for _ in range(M)]    # 2^-3 .. 2^1
B = [[value(2, 15, 11, 15) for _ in range(N)] for _ in range(K)]  # 2^-4 .. 2^0
for i in range(1, M):
    A[i][10], A[i][11] = sign() * 448.0, sign() * 2.0**-9
for j in range(1, N):
    B[10][j], B[11][j] = sign() * 2.0**-16, sign() * 57344.0
A[0] = [1.0] + [2.0**-6] * (K - 1)
for k in range(K): B[k][0] = 1.0 if k == 0 else 2.0**-6
npy('mixed_a_e4m3.npy', (M, K), [v for r in A for v in r])
npy('mixed_b_e5m2.npy', (K, N), [v for r in B for v in r])
