#!/usr/bin/env python3
"""Writes the stacked-matmul golden-test inputs (run in tests/cli/data): attention scores per head,
q [2, 3, 4, 16] and kᵀ [2, 3, 16, 4] holding bf16 values m/8, |m| <= 16 (as fp32), and C = q·kᵀ
per head, exact (every partial sum a multiple of 1/64 below 2^8: exact in fp32), with elements
[1, 2, 1, 3] and [1, 2, 2, 0] of head 2 in batch 1 off by +1 (a broken head). Python standard
library only; seeded."""
import struct, random
random.seed(31)
Bt, H, M, K, N = 2, 3, 4, 16, 4
Q = [random.randint(-16, 16) for _ in range(Bt * H * M * K)]
KT = [random.randint(-16, 16) for _ in range(Bt * H * K * N)]
def npy(path, shape, vals):
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': (%s), }" % ", ".join(map(str, shape))
    h = h + ' ' * (64 - (10 + len(h) + 1) % 64) + '\n'
    open(path, 'wb').write(b"\x93NUMPY\x01\x00" + struct.pack('<H', len(h)) + h.encode() + struct.pack('<%df' % len(vals), *vals))
C = []
for m in range(Bt * H):
    for i in range(M):
        for j in range(N):
            C.append(sum(Q[(m * M + i) * K + k] * KT[(m * K + k) * N + j] for k in range(K)) / 64)
for (b, h, i, j) in ((1, 2, 1, 3), (1, 2, 2, 0)):
    C[((b * H + h) * M + i) * N + j] += 1
npy('stacked_q.npy', (Bt, H, M, K), [q / 8 for q in Q]); npy('stacked_kt.npy', (Bt, H, K, N), [k / 8 for k in KT])
npy('stacked_c.npy', (Bt, H, M, N), C)
