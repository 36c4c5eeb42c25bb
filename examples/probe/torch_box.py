#!/usr/bin/env python3
"""A black box for `numfid probe run`: PyTorch CPU kernels on the .npy files numfid writes.

    numfid probe run --op matmul --k 64 --in bf16 --out bf16 \
        --cmd '/usr/bin/python3 torch_box.py matmul {a} {b} {c}' --output torch-bf16-matmul.yaml

Inputs: bf16 as bit patterns (<u2, numfid's .npy convention) or float32 values. Ops:
matmul:      torch.matmul(A, B) on bf16 tensors, bf16 result (A M×K, B K×N);
matmul_fp32: torch.matmul(A.float(), B.float()), fp32 result (the bf16 values widened);
dot:         torch.dot(A[r], B[r]) per row, bf16 result;
sum:         A.sum(dim=1) on bf16, bf16 result.
bf16 results are written as float32 (every bf16 value is one), fp32 results as float32.
"""
import sys

import numpy as np
import torch


def load(path):
    x = np.load(path)
    if x.dtype == np.uint16:  # bf16 bit patterns
        return torch.from_numpy(x.astype(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(np.ascontiguousarray(x, dtype=np.float32)).bfloat16()


op, a_path, b_path, c_path = sys.argv[1:5]
a = load(a_path)
if op == "sum":
    c = a.sum(dim=1)
else:
    b = load(b_path)
    if op == "matmul":
        c = torch.matmul(a, b)
    elif op == "matmul_fp32":
        c = torch.matmul(a.float(), b.float())
    elif op == "dot":
        c = torch.stack([torch.dot(a[r], b[r]) for r in range(a.shape[0])])
    else:
        sys.exit(f"torch_box.py: unknown op {op}")
np.save(c_path, np.ascontiguousarray(c.float().numpy(), dtype=np.float32))
