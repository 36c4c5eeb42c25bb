#!/usr/bin/env python3
"""Writes the layernorm golden-test inputs (run in tests/cli/data): X (8x64 bf16 values as
float32; rows of small spread, where eps matters), gamma and beta (64 fp32 values each), Y = a
legal layernorm of X computed in fp32 (two-pass mean and biased variance, every operation
rounded to fp32, 1/sqrt(var + eps) then multiplied, gamma, beta) cast to bf16 by round to
nearest even, and a defective one with eps outside the square root: (x - mu)/(sqrt(var) + eps).
Python standard library only; seeded."""
import math, random, struct
random.seed(5)
def f32(x): return struct.unpack('<f', struct.pack('<f', x))[0]
def bf(x):
    u = struct.unpack('<I', struct.pack('<f', x))[0]; u = (u + 0x7FFF + ((u >> 16) & 1)) & 0xFFFF0000
    return struct.unpack('<f', struct.pack('<I', u))[0]
def npy(path, shape, vals):
    dims = '(%d,)' % shape[0] if len(shape) == 1 else '(%d, %d)' % shape
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % dims; pad = 64 - (10 + len(h) + 1) % 64; h = h + ' ' * pad + '\n'
    open(path, 'wb').write(b"\x93NUMPY\x01\x00" + struct.pack('<H', len(h)) + h.encode() + struct.pack('<%df' % len(vals), *vals))
R, C, eps = 8, 64, 1e-5
X = [[bf(random.gauss(1.0, 0.004 * (r + 1))) for _ in range(C)] for r in range(R)]
G = [f32(random.gauss(1, 0.3)) for _ in range(C)]
B = [f32(random.gauss(0, 0.1)) for _ in range(C)]
Y, D = [], []
for row in X:
    s = 0.0
    for v in row: s = f32(s + v)
    mu = f32(s / C)
    q = 0.0
    for v in row:
        d = f32(v - mu); q = f32(q + f32(d * d))
    var = f32(q / C)
    r = f32(1 / math.sqrt(f32(var + f32(eps))))
    bad = f32(f32(math.sqrt(var)) + f32(eps))
    for j, v in enumerate(row):
        d = f32(v - mu)
        Y.append(bf(f32(f32(f32(d * r) * G[j]) + B[j])))
        D.append(bf(f32(f32(f32(d / bad) * G[j]) + B[j])))
npy('layernorm_x.npy', (R, C), [v for r in X for v in r]); npy('layernorm_gamma.npy', (C,), G); npy('layernorm_beta.npy', (C,), B)
npy('layernorm_y_bf16.npy', (R, C), Y); npy('layernorm_y_eps_outside_sqrt.npy', (R, C), D)
