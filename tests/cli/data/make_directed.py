#!/usr/bin/env python3
"""Writes the --out-rounding rtz golden-test inputs (run in tests/cli/data): A (8x32) and B (32x8)
holding bf16 values m/16, |m| <= 255 (as fp32); the exact A·B (integers / 256, in Python
integers) truncated to bf16's 8 significant bits (a kernel that truncates its output cast: what
`--out-rounding rtz` claims), and the same rounded to nearest, ties to even (a kernel that rounds
where it claims to truncate). Python standard library only; seeded."""
import struct, random
random.seed(23)
M, K, N = 8, 32, 8
A = [random.randint(-255, 255) for _ in range(M * K)]
B = [random.randint(-255, 255) for _ in range(K * N)]
def npy(path, shape, vals):
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % shape; pad = 64 - (10 + len(h) + 1) % 64
    h = h + ' ' * pad + '\n'
    open(path, 'wb').write(b"\x93NUMPY\x01\x00" + struct.pack('<H', len(h)) + h.encode() + struct.pack('<%df' % len(vals), *vals))
def to8(s, nearest):  # |s| to 8 significant bits, truncated or to nearest (ties to even); sign kept
    a = abs(s); drop = max(a.bit_length() - 8, 0); q, r = divmod(a, 1 << drop)
    if nearest and drop and (r > (1 << (drop - 1)) or (r == (1 << (drop - 1)) and q % 2)): q += 1
    return (-1 if s < 0 else 1) * (q << drop)
S = [sum(A[i * K + k] * B[k * N + j] for k in range(K)) for i in range(M) for j in range(N)]
npy('directed_a.npy', (M, K), [a / 16 for a in A]); npy('directed_b.npy', (K, N), [b / 16 for b in B])
npy('directed_c_rtz.npy', (M, N), [to8(s, False) / 256 for s in S])
npy('directed_c_rne.npy', (M, N), [to8(s, True) / 256 for s in S])
