"""Helpers of the golden-data writers here (make_rmsnorm.py, make_layernorm_eps.py): a Python
float rounded to fp32, and a 2-d fp32 .npy file written with the standard library only."""
import struct
def f32(x): return struct.unpack('<f', struct.pack('<f', x))[0]
def npy(path, shape, vals):
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }" % shape; pad = 64 - (10 + len(h) + 1) % 64; h = h + ' ' * pad + '\n'
    open(path, 'wb').write(b"\x93NUMPY\x01\x00" + struct.pack('<H', len(h)) + h.encode() + struct.pack('<%df' % len(vals), *vals))
