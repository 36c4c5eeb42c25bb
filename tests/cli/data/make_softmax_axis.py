#!/usr/bin/env python3
"""Writes the softmax-along-axis-0 gate inputs (run in tests/cli/data): X (16x8 fp32, seeded
N(0, 2)) and Y = softmax of each column (axis 0: PyTorch's dim=0), computed in double and
rounded once to fp32 — legal under `--compute fp32` along axis 0, and no softmax of X's rows.
Python standard library only; seeded."""
import math, random, struct
random.seed(11)
def f32(x): return struct.unpack('<f', struct.pack('<f', x))[0]
def npy(path, shape, vals):
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % shape; pad = 64 - (10 + len(h) + 1) % 64
    h = h + ' ' * pad + '\n'
    open(path, 'wb').write(b"\x93NUMPY\x01\x00" + struct.pack('<H', len(h)) + h.encode() + struct.pack('<%df' % len(vals), *vals))
R, C = 16, 8
X = [[f32(random.gauss(0, 2)) for _ in range(C)] for _ in range(R)]
Y = [[0.0] * C for _ in range(R)]
for j in range(C):
    m = max(X[i][j] for i in range(R))
    s = sum(math.exp(X[i][j] - m) for i in range(R))
    for i in range(R): Y[i][j] = f32(math.exp(X[i][j] - m) / s)
npy('softmax_axis_x.npy', (R, C), [v for row in X for v in row])
npy('softmax_axis0_y.npy', (R, C), [v for row in Y for v in row])
