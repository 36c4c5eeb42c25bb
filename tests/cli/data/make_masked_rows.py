#!/usr/bin/env python3
"""Writes the --masked-row golden-test inputs (run in tests/cli/data): X (6x32 fp32; rows 1 and 4
fully masked, every entry -inf; row 2 masked but for every third entry), a legal fp32 softmax of X
computed the way make_softmax.py does (fp32 subtraction, exp, sequential sum, division) with the
fully masked rows written as a guarded kernel writes them (PyTorch's _safe_softmax: 0 in every
element), and the same with torch.softmax's NaN there (0/0). Python standard library only; seeded."""
import struct, random, math
random.seed(11)
def f32(x): return struct.unpack('<f', struct.pack('<f', x))[0]
R, C = 6, 32
X = [[-math.inf if r in (1, 4) or (r == 2 and j % 3 != 0) else f32(random.gauss(0, 3)) for j in range(C)]
     for r in range(R)]
def npy(path, vals):
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % (R, C); pad = 64 - (10 + len(h) + 1) % 64
    h = h + ' ' * pad + '\n'
    open(path, 'wb').write(b"\x93NUMPY\x01\x00" + struct.pack('<H', len(h)) + h.encode() + struct.pack('<%df' % len(vals), *vals))
guarded, plain = [], []
for row in X:
    if all(x == -math.inf for x in row):
        guarded += [0.0] * C; plain += [math.nan] * C
        continue
    m = max(row); e = [0.0 if x == -math.inf else f32(math.exp(f32(x - m))) for x in row]; s = 0.0
    for v in e: s = f32(s + v)
    y = [f32(v / s) for v in e]; guarded += y; plain += y
npy('masked_rows_x.npy', [v for r in X for v in r]); npy('masked_rows_y_zero.npy', guarded); npy('masked_rows_y_nan.npy', plain)
