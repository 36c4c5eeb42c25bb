#!/usr/bin/env python3
"""A black box for `numfid probe run`: NumPy float32 kernels on the .npy files numfid writes.

    numfid probe run --op sum --k 64 --cmd 'python3 numpy_box.py sum {a} {b} {c}' --output numpy-sum.yaml

sum: np.sum(A, axis=1) (np.add.reduce: numpy's pairwise_sum per row);
dot: row-wise np.einsum('rk,rk->r', A, B);  rowdot: one np.dot(A[r], B[r]) per row (BLAS sdot);
matmul: A @ B (BLAS sgemm, whatever kernel OpenBLAS dispatches to).
"""
import sys

import numpy as np

op, a_path, b_path, c_path = sys.argv[1:5]
a = np.load(a_path).astype(np.float32)
if op == "sum":
    c = np.sum(a, axis=1, dtype=np.float32)
else:
    b = np.load(b_path).astype(np.float32)
    if op == "dot":
        c = np.einsum("rk,rk->r", a, b)
    elif op == "rowdot":
        c = np.array([np.dot(a[r], b[r]) for r in range(a.shape[0])], dtype=np.float32)
    elif op == "matmul":
        c = a @ b
    else:
        sys.exit(f"numpy_box.py: unknown op {op}")
np.save(c_path, np.ascontiguousarray(c, dtype=np.float32))
