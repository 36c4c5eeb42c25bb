#!/usr/bin/env python3
"""Writes the integer-GEMM golden-test inputs (run in tests/cli/data): A (6x40 int8), B (40x5 uint8),
per-column scales (5 fp32), and outputs computed here with Python integers and fractions:
  acc = sum_k (A - (-3)) * (B - 131);  y = clamp(round(acc * S) + 5, -128, 127)  (int8)
with S = 2^-9 (per tensor): int_rne (ties to even, the claim), int_zp_flipped (the output zero point
subtracted: a defect); into int32 with S = 2^-2 (a tie for every acc = 2 mod 4): int_rne32 and int_rna32
(ties away: a defect under an rne claim);
with the per-column scales: int_pc; and the int32 accumulator itself (acc32).
Python standard library only; seeded."""
import struct, random
from fractions import Fraction
random.seed(12)
M, K, N = 6, 40, 5
A = [[random.randint(-128, 127) for _ in range(K)] for _ in range(M)]
B = [[random.randint(0, 255) for _ in range(N)] for _ in range(K)]
def npy(path, shape, code, vals):
    h = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (code, ', '.join(map(str, shape)) + (',' if len(shape) == 1 else ''))
    pad = 64 - (10 + len(h) + 1) % 64; h = h + ' ' * pad + '\n'
    fmt = {'|i1': 'b', '|u1': 'B', '<i4': 'i', '<f4': 'f'}[code]
    open(path, 'wb').write(b"\x93NUMPY\x01\x00" + struct.pack('<H', len(h)) + h.encode() + struct.pack('<%d%s' % (len(vals), fmt), *vals))
acc = [[sum((A[i][k] + 3) * (B[k][j] - 131) for k in range(K)) for j in range(N)] for i in range(M)]
def rne(x):
    f = x.numerator // x.denominator; r = x - f
    return f + 1 if r > Fraction(1, 2) or (r == Fraction(1, 2) and f % 2) else f
def rna(x):
    f = x.numerator // x.denominator; r = x - f
    return f + 1 if r > Fraction(1, 2) or (r == Fraction(1, 2) and x > 0) else f
clamp = lambda y: max(-128, min(127, y))
scales = [2.0**-8, 2.0**-9, 0.01171875, 2.0**-10, 0.0029296875]  # fp32-exact
npy('int_a.npy', (M, K), '|i1', [v for r in A for v in r])
npy('int_b.npy', (K, N), '|u1', [v for r in B for v in r])
npy('int_scales.npy', (N,), '<f4', scales)
npy('int_rne.npy', (M, N), '|i1', [clamp(rne(Fraction(a) * Fraction(1, 512)) + 5) for r in acc for a in r])
npy('int_zp_flipped.npy', (M, N), '|i1', [clamp(rne(Fraction(a) * Fraction(1, 512)) - 5) for r in acc for a in r])
npy('int_rne32.npy', (M, N), '<i4', [rne(Fraction(a, 4)) + 5 for r in acc for a in r])
npy('int_rna32.npy', (M, N), '<i4', [rna(Fraction(a, 4)) + 5 for r in acc for a in r])
npy('int_pc.npy', (M, N), '|i1', [clamp(rne(Fraction(r[j]) * Fraction(scales[j])) + 5) for r in acc for j in range(N)])
npy('int_acc32.npy', (M, N), '<i4', [a for r in acc for a in r])
