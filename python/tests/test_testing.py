"""numfid.testing.assert_consistent, emulate and profiles; and the torch / ml_dtypes adapters,
exercised with light stand-ins (torch and ml_dtypes are not installable on the build machines:
these tests cover numfid's own dispatch code only, not compatibility with the real packages;
test_torch_real runs against real torch where it is installed)."""

import sys
import types

import numpy as np
import pytest

import numfid
from numfid import _arrays
from numfid.testing import assert_consistent, assert_matmul_consistent

CLAIM = "--in bf16 --acc fp32 --out bf16"


def test_assert_consistent_passes_and_returns_the_result(data):
    r = assert_consistent("matmul", CLAIM, a=data["a"], b=data["b"], c=data["c_sequential_fp32acc"])
    assert r.verdict == "consistent"
    assert assert_matmul_consistent(data["a"], data["b"], data["c_blocked128_fp32acc"], CLAIM).consistent


def test_assert_consistent_refuses_a_non_bool_allow_suspicious(data):
    # "no" is truthy: read as a bool it would allow what the caller meant to refuse.
    for bad in ("no", "False", 0, None):
        with pytest.raises(TypeError, match="allow_suspicious must be True or False"):
            assert_consistent("matmul", CLAIM, allow_suspicious=bad, a=data["a"], b=data["b"],
                              c=data["c_sequential_fp32acc"])


def test_assert_consistent_message_is_the_report_not_the_values(data):
    with pytest.raises(AssertionError) as e:
        assert_consistent("matmul", CLAIM, a=data["a"], b=data["b"], c=data["c_bf16acc"], msg="my kernel")
    text = str(e.value)
    r = numfid.check_matmul(data["a"], data["b"], data["c_bf16acc"], CLAIM)
    assert text == "my kernel\n" + r.report.rstrip()
    assert "DEFECT" in text and "worst elements" in text and "bound derivation" in text
    assert "narrow-accumulator" in text
    assert len(text.splitlines()) < 40, "a short report, not a dump of the tensor"


def test_emulate_matches_the_recorded_example_outputs(data):
    # examples/README.md: c_blocked128 is blocked(128) with fp32 accumulation, c_sequential the
    # cpu-sequential profile (both made by `numfid emulate`).
    d = numfid.emulate("matmul", "--in bf16 --out bf16 --plan blocked(128)", a=data["a"], b=data["b"], bits=True)
    assert np.array_equal(d, data["c_blocked128_fp32acc"])
    d = numfid.emulate("matmul", "--in bf16 --out bf16 --profile cpu-sequential", a=data["a"], b=data["b"])
    assert d.dtype == np.float32
    assert np.array_equal(d.view(np.uint32) >> 16, data["c_sequential_fp32acc"])
    # c_format= names the format of an addend: without c= it is refused, not ignored.
    with pytest.raises(ValueError, match="c_format= names the format of an addend: give the addend with c="):
        numfid.emulate("matmul", "--in bf16 --out bf16 --plan sequential", a=data["a"], b=data["b"], c_format="bf16")


def test_emulate_by_profile_name_needs_a_typed_array(data):
    with pytest.raises(ValueError, match="profile 'trn2' alone needs A's format"):
        numfid.emulate("matmul", "trn2", a=data["a"], b=data["b"])


def test_profiles_and_formats():
    names = [p["name"] for p in numfid.profiles()]
    assert "trn2" in names and "nvidia-h100-tc" in names
    trn2 = next(p for p in numfid.profiles() if p["name"] == "trn2")
    assert trn2["model"] == "tensor-engine" and trn2["fields"]
    assert {"section", "key", "value", "provenance", "source"} <= set(trn2["fields"][0])
    # Scaled-gemm recipes list as such, their block_scaling fields with provenance.
    mx = next(p for p in numfid.profiles() if p["name"] == "trn3-mx")
    assert mx["model"] == "scaled-gemm"
    scaling = {f["key"]: f for f in mx["fields"] if f["section"] == "block_scaling"}
    assert scaling["scale_block"]["value"] == "1x32" and scaling["scale_format"]["value"] == "e8m0"
    assert scaling["partial_sums"]["provenance"] == "assumed" and scaling["partial_sums"]["source"]
    assert numfid.formats()[:3] == ["fp32", "fp16", "bf16"]


# ------------------------------------------------------------------- stand-ins

class _Dtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return f"torch.{self.name}"


class _Device:
    type = "cpu"


class FakeTensor:
    """The part of torch.Tensor numfid touches: dtype, device, detach, cpu, contiguous, view,
    float, numpy. Holds a numpy array (for bfloat16: its uint16 patterns)."""

    def __init__(self, array, dtype):
        self._a = array
        self.dtype = _Dtype(dtype)
        self.device = _Device()

    def detach(self):
        return self

    def contiguous(self):
        return FakeTensor(np.ascontiguousarray(self._a), self.dtype.name)

    def view(self, dtype):
        return FakeTensor(self._a.view({"int16": np.int16, "uint8": np.uint8}[dtype.name]), dtype.name)

    def numpy(self):
        return self._a


FakeTensor.__module__ = "torch"
FakeTensor.__name__ = "Tensor"


@pytest.fixture
def fake_torch(monkeypatch):
    mod = types.ModuleType("torch")
    mod.int16, mod.uint8 = _Dtype("int16"), _Dtype("uint8")
    monkeypatch.setitem(sys.modules, "torch", mod)
    return mod


def bf16_bits(x):
    return (np.ascontiguousarray(x, np.float32).view(np.uint32) >> 16).astype(np.uint16)


def test_torch_like_tensors_take_the_torch_path(data, fake_torch):
    a = FakeTensor(bf16_bits(data["a"]), "bfloat16")
    b = FakeTensor(np.asfortranarray(data["b"]), "float32")
    c = FakeTensor(data["c_bf16acc"], "bfloat16")
    assert _arrays.is_torch_tensor(a)
    op, fmt = _arrays.as_operand(a, "a")
    assert op[1] == "BF16" and fmt == "bf16" and op[0].dtype == np.uint16
    want = numfid.check_matmul(data["a"], data["b"], data["c_bf16acc"], CLAIM).to_json()
    assert numfid.check_matmul(a, b, c, CLAIM).to_json() == want
    # A bare profile name takes --in/--out from A's dtype.
    d = numfid.emulate("matmul", "cpu-sequential", a=a, b=FakeTensor(bf16_bits(data["b"]), "bfloat16"), bits=True)
    assert np.array_equal(d, data["c_sequential_fp32acc"])
    with pytest.raises(TypeError, match="torch dtype complex64 is not supported"):
        _arrays.as_operand(FakeTensor(np.zeros(2, np.complex64), "complex64"), "a")


def test_ml_dtypes_names_map_to_formats():
    # The mapping table itself (a real ml_dtypes array cannot be made without ml_dtypes).
    assert _arrays._ML_DTYPES["bfloat16"] == ("bf16", "BF16")
    assert _arrays._ML_DTYPES["float8_e4m3fn"] == ("fp8_e4m3", "F8_E4M3")
    for name, (fmt, _) in _arrays._ML_DTYPES.items():
        assert fmt in numfid.formats(), name


def test_opaque_void_arrays_are_patterns_of_the_declared_format(data):
    # '|V2' arrays (how ml_dtypes arrays look to a NumPy without ml_dtypes) hold patterns.
    a = bf16_bits(data["a"]).view("V2")
    b = bf16_bits(data["b"]).view("V2")
    c = data["c_bf16acc"].view("V2")
    want = numfid.check_matmul(data["a"], data["b"], data["c_bf16acc"], CLAIM).to_json()
    assert numfid.check_matmul(a, b, c, CLAIM).to_json() == want


def test_torch_real():
    torch = pytest.importorskip("torch")
    a = torch.randn(16, 64).to(torch.bfloat16)
    b = torch.randn(64, 8).to(torch.bfloat16)
    c = (a.float() @ b.float()).to(torch.bfloat16)
    assert numfid.check_matmul(a, b, c, CLAIM).verdict == "consistent"


def test_torch_negative_and_conjugate_views_are_read_as_their_values():
    """A tensor with torch's negative bit (a lazily negated view) refuses .numpy() ("Can't call
    numpy() on Tensor that has negative bit set"): numfid resolves it first, so -(-a) is a."""
    torch = pytest.importorskip("torch")
    if not hasattr(torch, "_neg_view"):
        pytest.skip("this torch has no negative bit")
    a = torch.randn(16, 64).to(torch.bfloat16)
    b = torch.randn(64, 8).to(torch.bfloat16)
    c = (a.float() @ b.float()).to(torch.bfloat16)
    assert torch._neg_view(-a).is_neg()
    want = numfid.check_matmul(a, b, c, CLAIM).to_json()
    assert numfid.check_matmul(torch._neg_view(-a), b, c, CLAIM).to_json() == want
    assert numfid.check_matmul(a.float(), torch._neg_view(-b.float()), c, CLAIM).to_json() == want
    x = torch._neg_view(-a.float())
    assert np.array_equal(numfid.convert(x, "bf16"), a.float().numpy())
    # A conjugate view of a real tensor is the tensor itself; resolve_conj is harmless there.
    assert numfid.check_matmul(a.conj(), b, c, CLAIM).to_json() == want


def test_emulate_sum_is_the_plan_and_check_sum_expects_it_bit_for_bit():
    # A sequential fp32 sum along axis 1 of a rank-3 array, written out as float32 scalar adds
    # (an independent second implementation), against numfid's plan evaluator.
    rng = np.random.default_rng(3)
    x = rng.standard_normal((2, 50, 3)).astype(np.float32)
    want = np.empty((2, 3), dtype=np.float32)
    for o in range(2):
        for i in range(3):
            s = x[o, 0, i]
            for k in range(1, 50):
                s = np.float32(s + x[o, k, i])
            want[o, i] = s
    claim = "--in fp32 --acc fp32 --out fp32 --plan sequential"
    d = numfid.emulate("sum", claim, x=x, axis=1)
    assert d.shape == (2, 3) and np.array_equal(d, want)
    r = numfid.check("sum", claim + " --expect bit-exact", x=x, c=want, axis=1)
    assert r.verdict == "consistent" and "matches the model bit for bit" in r.report
    bad = want.copy()
    bad[1, 2] = np.nextafter(bad[1, 2], np.float32(np.inf))
    r = numfid.check("sum", claim + " --expect bit-exact", x=x, c=bad, axis=1)
    assert r.verdict == "defect" and "1 of 6 elements differ" in r.report
    with pytest.raises(ValueError, match="give x="):
        numfid.emulate("sum", claim, a=x, b=x)


def test_row_options_reach_the_check():
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, 64)).astype(np.float32)
    e = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    c = (e / e.sum(axis=1, keepdims=True)).astype(np.float32)
    claim = "--in fp32 --out fp32 --compute fp32"
    r = numfid.check("softmax", claim, x=x, c=c, softmax="online")
    assert r.verdict == "consistent" and "softmax in fp32 (online)" in r.report
    with pytest.raises(ValueError, match="unknown method"):
        numfid.check("softmax", claim, x=x, c=c, softmax="fused")
    mu = x.astype(np.float64).mean(axis=1, keepdims=True)
    y = ((x - mu) / np.sqrt(x.astype(np.float64).var(axis=1, keepdims=True) + 1e-5)).astype(np.float32)
    r = numfid.check("layernorm", claim, x=x, c=y, variance="chan")
    assert r.verdict == "consistent" and "variance: chan" in r.report
    # PyTorch CPU's layer_norm: its moments' tree (8 fp32 lanes) and the shifted form x·r + b.
    r = numfid.check("layernorm", claim, x=x, c=y, variance="rowwise-moments(8)", norm_form="shifted")
    assert r.verdict == "consistent" and "variance: rowwise-moments(8)) (shifted" in r.report
    with pytest.raises(ValueError, match="lane count"):
        numfid.check("layernorm", claim, x=x, c=y, variance="rowwise-moments(0)")
    with pytest.raises(ValueError, match="unknown form"):
        numfid.check("layernorm", claim, x=x, c=y, norm_form="skewed")


def test_emulate_keeps_the_units_nan_pattern_in_fp32_values():
    # A100's block FMA: inf·0 gives NaN 0x7fffffff (CUDA's pattern, numerics/block_fma.h); stored as
    # fp32 it is that pattern, in the values array as in bits=True.
    a = np.ones((1, 8), dtype=np.float32)
    b = np.ones((8, 1), dtype=np.float32)
    a[0, 3] = np.inf
    b[3, 0] = 0
    claim = "--in bf16 --out fp32 --profile nvidia-a100-tc"
    bits = numfid.emulate("matmul", claim, a=a, b=b, bits=True)
    values = numfid.emulate("matmul", claim, a=a, b=b)
    assert bits[0, 0] == 0x7FFFFFFF
    assert values.view(np.uint32)[0, 0] == 0x7FFFFFFF


def test_flush_to_zero_claims_reach_the_model_and_the_bound():
    # fp32 products of 2^-70 · 2^-70 = 2^-140 (subnormal): a flushing sequential accumulator loses
    # every one (0 against 64 · 2^-140 = 2^-134), an IEEE one keeps them. The --ftz claim covers
    # its own model's 0; the claim without it calls that 0 a defect.
    a = np.full((1, 64), 2.0 ** -70, dtype=np.float32)
    b = np.full((64, 1), 2.0 ** -70, dtype=np.float32)
    ftz = "--in fp32 --acc fp32 --out fp32 --plan sequential --ftz --zero-start"
    flushed = numfid.emulate("matmul", ftz, a=a, b=b)
    assert flushed[0, 0] == 0
    assert numfid.emulate("matmul", "--in fp32 --acc fp32 --out fp32 --plan sequential", a=a, b=b)[0, 0] == 2.0 ** -134
    r = numfid.check("matmul", ftz, a=a, b=b, c=flushed)
    assert r.verdict != "defect" and "flush to zero (ftz)" in r.report
    r = numfid.check("matmul", "--in fp32 --acc fp32 --out fp32 --plan sequential", a=a, b=b, c=flushed)
    assert r.verdict == "defect"
