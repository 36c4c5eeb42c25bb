#!/usr/bin/env python3
"""Writes torch_gelu_subnormal_{x,y}.npy (run in tests/cli/data with PyTorch 1.13 CPU): torch's
bf16 F.gelu (erf form) of three subnormal bf16 inputs and 29 ordinary ones, bf16 patterns in
uint16 containers. torch returns 0 (or -0) for the subnormal inputs, whose exact GELU (~x/2) is
subnormal in bf16 too: a flush that the golden check_gelu_bf16_subnormal_flush names as such
(signature subnormal-flush, not lone-outlier or function-accuracy)."""
import numpy as np
import torch

x = torch.tensor([1e-39, -1e-39, 5e-40] + [0.25 * (i - 14) for i in range(29)], dtype=torch.bfloat16)
y = torch.nn.functional.gelu(x)
assert (y[:3].float() == 0).all(), "this torch does not flush: the golden's premise does not hold"
np.save("torch_gelu_subnormal_x.npy", x.view(torch.int16).numpy().view(np.uint16))
np.save("torch_gelu_subnormal_y.npy", y.view(torch.int16).numpy().view(np.uint16))
