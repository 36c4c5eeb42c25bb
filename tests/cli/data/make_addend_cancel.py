#!/usr/bin/env python3
"""Writes addend_cancel_bf16.npy (run in tests/cli/data): the addend C (64x48 bf16 patterns,
uint16) of the --addend-at golden cases, C = -(examples/data/c_sequential_fp32acc), the bf16
result of A·B, with the last bit of every third pattern flipped: A·B + C is a few bf16 ulps of
A·B at most, so fl(fl(A·B) + C) (addmm's epilogue) keeps fl(A·B)'s rounding error whole while the
exact result is tiny: outside the start claim's bound, inside the output claim's. Python
standard library only."""
import struct
def read_u16(path):
    raw = open(path, 'rb').read()
    hlen = struct.unpack('<H', raw[8:10])[0]
    header = raw[10:10 + hlen].decode()
    assert "'<u2'" in header and "(64, 48)" in header, header
    body = raw[10 + hlen:]
    return list(struct.unpack('<%dH' % (len(body) // 2), body))
def write_u16(path, shape, vals):
    h = "{'descr': '<u2', 'fortran_order': False, 'shape': (%s), }" % ', '.join(map(str, shape))
    pad = 64 - (10 + len(h) + 1) % 64; h = h + ' ' * pad + '\n'
    open(path, 'wb').write(b"\x93NUMPY\x01\x00" + struct.pack('<H', len(h)) + h.encode() + struct.pack('<%dH' % len(vals), *vals))
c = read_u16('../../../examples/data/c_sequential_fp32acc.npy')
write_u16('addend_cancel_bf16.npy', (64, 48), [(v ^ 0x8000) ^ (1 if i % 3 == 0 else 0) for i, v in enumerate(c)])
