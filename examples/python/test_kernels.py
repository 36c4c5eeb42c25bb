"""Kernel tests with numfid in pytest (docs/python.md): a NumPy model of an NKI-style tiled
matmul, and a PyTorch matmul (skipped where torch is not installed).

The NKI-style kernel computes C = A·B the way a Trainium kernel does: K is cut into tiles of
128 rows (the partition dimension), each tile's product goes into a PSUM accumulator in fp32,
and the result is cast to bf16 once at the end. The claim states exactly that arithmetic, so
the test needs no tolerance of its own: numfid derives it, and any legal summation order passes.

Run:  PYTHONPATH=build/python /usr/bin/python3 -m pytest examples/python
"""

import numpy as np
import pytest

import numfid
from numfid.testing import assert_consistent

PARTITION = 128  # rows of a K tile: the Tensor Engine's partition dimension
CLAIM = "--in bf16 --acc fp32 --out bf16"


def to_bf16(x):
    """float32 values of bf16, rounded to nearest even (the kernel's output cast)."""
    return numfid.convert(np.asarray(x, np.float32), "bf16")


def tiled_matmul(a, b, psum_dtype=np.float32):
    """NKI-style: for each 128-row K tile, PSUM += A[:, tile] @ B[tile, :]; then cast to bf16.

    a, b: float32 arrays of bf16 values (as loaded from HBM). psum_dtype: the accumulator;
    a buggy kernel that keeps its partial sums in bf16 is modelled by rounding PSUM to bf16
    after every tile.
    """
    m, k = a.shape
    psum = np.zeros((m, b.shape[1]), np.float32)
    for k0 in range(0, k, PARTITION):
        tile = a[:, k0:k0 + PARTITION] @ b[k0:k0 + PARTITION, :]  # float32: bf16 products are exact
        psum = psum + tile
        if psum_dtype == "bf16":
            psum = to_bf16(psum)
    return to_bf16(psum)


@pytest.fixture
def operands():
    rng = np.random.default_rng(2026)
    a = numfid.convert(rng.standard_normal((64, 1024)), "bf16")
    b = numfid.convert(rng.standard_normal((1024, 96)), "bf16")
    return a, b


def test_tiled_matmul_is_consistent_with_its_claim(operands):
    a, b = operands
    c = tiled_matmul(a, b)
    result = assert_consistent("matmul", CLAIM, a=a, b=b, c=c)
    assert result.counts["outside_deterministic"] == 0


def test_a_bf16_psum_is_caught(operands):
    a, b = operands
    c = tiled_matmul(a, b, psum_dtype="bf16")
    with pytest.raises(AssertionError, match="DEFECT"):
        assert_consistent("matmul", CLAIM, a=a, b=b, c=c)


def test_the_tolerance_is_derived_not_chosen():
    t = numfid.tol("matmul", CLAIM, k=1024)
    assert t.bounds["deterministic"]["sum_abs_coefficient"] > 0
    assert any("unit roundoff" in line for line in t.derivation)


def test_pytorch_matmul():
    torch = pytest.importorskip("torch")
    torch.manual_seed(0)
    a = torch.randn(64, 512, dtype=torch.bfloat16)
    b = torch.randn(512, 48, dtype=torch.bfloat16)
    c = a @ b  # CPU bf16 matmul: fp32 accumulation, one rounding to bf16
    assert_consistent("matmul", CLAIM, a=a, b=b, c=c)
    # The same claim catches an output accumulated in bf16.
    bad = torch.zeros(64, 48, dtype=torch.bfloat16)
    for k in range(512):
        bad = bad + a[:, k:k + 1] * b[k:k + 1, :]
    with pytest.raises(AssertionError):
        assert_consistent("matmul", CLAIM, a=a, b=b, c=bad)
