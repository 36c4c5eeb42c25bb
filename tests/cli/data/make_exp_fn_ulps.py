#!/usr/bin/env python3
"""Writes the function-accuracy golden-test inputs (run in tests/cli/data): x (4x64 fp32, uniform in
[-10, 10], seeded) and exp_2ulp: exp(x) correctly rounded to fp32 (Python's double exp, then the
nearest float — exp of these arguments is never that close to an fp32 midpoint), moved 2 fp32 ulps
up on every 7th element: what a library exp accurate to 2-3 ulps gives. Under the default claim
(functions within 1 ulp) a defect; the `function-accuracy` signature names --fn-ulps 3.
Python standard library only; seeded."""
import math, random, struct
random.seed(20261203)
def f32(v):
    return struct.unpack('<f', struct.pack('<f', v))[0]
def next_up(v):
    b = struct.unpack('<I', struct.pack('<f', v))[0]
    return struct.unpack('<f', struct.pack('<I', b + 1 if v > 0 else b - 1))[0]
def npy(path, shape, vals):
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % ', '.join(map(str, shape))
    pad = 64 - (10 + len(h) + 1) % 64; h = h + ' ' * pad + '\n'
    open(path, 'wb').write(b"\x93NUMPY\x01\x00" + struct.pack('<H', len(h)) + h.encode() + struct.pack('<%df' % len(vals), *vals))
x = [f32(random.uniform(-10, 10)) for _ in range(4 * 64)]
y = []
for i, v in enumerate(x):
    e = f32(math.exp(v))
    if i % 7 == 0:
        e = next_up(next_up(e))
    y.append(e)
npy('exp_x.npy', (4, 64), x)
npy('exp_2ulp.npy', (4, 64), y)
