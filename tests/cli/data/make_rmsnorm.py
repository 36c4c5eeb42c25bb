#!/usr/bin/env python3
"""Writes the rmsnorm golden-test inputs (run in tests/cli/data): X (16x256 fp32, N(0, 1)), a
legal rmsnorm of X computed in fp32 (x², sequential sum, /n, + eps, 1/sqrt then multiplied; every
operation rounded to fp32) and the same kernel without eps — a lean of every row's scale by
eps/(2·mean square) ≈ 5e-6, inside the deterministic bound, which the row-scale rule
(docs/verdict.md §8.4) calls a probable defect. Python standard library only; seeded."""
import math, random
from f32npy import f32, npy
random.seed(11)
R, C, eps = 16, 256, 1e-5
X = [[f32(random.gauss(0.0, 1.0)) for _ in range(C)] for r in range(R)]
def rms(row, e):
    s = 0.0
    for v in row: s = f32(s + f32(v * v))
    ms = f32(s / C)
    v = f32(ms + f32(e)) if e else ms
    r = f32(1 / math.sqrt(v))
    return [f32(x * r) for x in row]
npy('rmsnorm_x.npy', (R, C), [v for row in X for v in row])
npy('rmsnorm_y.npy', (R, C), [v for row in X for v in rms(row, eps)])
npy('rmsnorm_y_no_eps.npy', (R, C), [v for row in X for v in rms(row, 0)])
