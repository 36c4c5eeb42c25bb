#!/usr/bin/env python3
"""Writes the softmax golden-test inputs (run in tests/cli/data): X (16x200 bf16 values as float32),
Y = a legal fp32 softmax of X (fp32 subtraction, exp, sequential sum, division; Python floats
rounded to fp32 after each step), and a defective one whose exps and running sum are held in bf16.
Python standard library only; seeded."""
import struct, random, math
random.seed(3)
def bf(x):
    u=struct.unpack('<I',struct.pack('<f',x))[0]; u=(u+0x7FFF+((u>>16)&1))&0xFFFF0000
    return struct.unpack('<f',struct.pack('<I',u))[0]
def f32(x): return struct.unpack('<f',struct.pack('<f',x))[0]
R,C=16,200
X=[[bf(random.gauss(0,2)) for _ in range(C)] for _ in range(R)]
def npy(path, rows, cols, vals):
    h="{'descr': '<f4', 'fortran_order': False, 'shape': (%d, %d), }"%(rows,cols); pad=64-(10+len(h)+1)%64; h=h+' '*pad+'\n'
    open(path,'wb').write(b"\x93NUMPY\x01\x00"+struct.pack('<H',len(h))+h.encode()+struct.pack('<%df'%len(vals),*vals))
Y=[];Yb=[]
for row in X:
    m=max(row); e=[f32(math.exp(f32(x-m))) for x in row]; s=0.0
    for v in e: s=f32(s+v)
    y=[f32(v/s) for v in e]; Y+= y
    eb=[bf(v) for v in e]; sb=0.0
    for v in eb: sb=bf(sb+v)
    Yb+=[f32(v/sb) for v in eb]
npy('softmax_x.npy',R,C,[v for r in X for v in r]); npy('softmax_y_fp32.npy',R,C,Y); npy('softmax_y_bf16_exp_and_sum.npy',R,C,Yb)
