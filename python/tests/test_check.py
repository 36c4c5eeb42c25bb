"""numfid.check and numfid.tol against the CLI of the same build: identical JSON, report and
exit code on the example data (examples/README.md) and on data written for the row ops, for
every array kind the module takes."""

import json

import numpy as np
import pytest

import numfid
from conftest import cli_json

CLAIMS = [
    "--in bf16 --acc fp32 --out bf16",
    "--in bf16 --out bf16 --profile trn2",
    "--in bf16 --out bf16 --plan blocked(128)",
    "--in bf16 --out bf16 --profile cpu-sequential",
]
OUTPUTS = ["c_sequential_fp32acc", "c_blocked128_fp32acc", "c_bf16acc", "c_truncated_output"]
# What examples/README.md says each output is under a plain fp32-accumulation claim.
EXPECTED = {"c_sequential_fp32acc": "consistent", "c_blocked128_fp32acc": "consistent", "c_bf16acc": "defect",
            "c_truncated_output": "defect"}


@pytest.mark.parametrize("claim", CLAIMS)
@pytest.mark.parametrize("output", OUTPUTS)
def test_matmul_identical_to_cli(cli, data, data_dir, tmp_path, claim, output):
    r = numfid.check_matmul(data["a"], data["b"], data[output], claim)
    rc, js, stdout = cli_json(cli, tmp_path, "check", "matmul", "--a", data_dir / "a.npy", "--b", data_dir / "b.npy",
                              "--c", data_dir / f"{output}.npy", *claim.split())
    assert r.to_json() == js
    assert r.report == stdout
    assert r.exit_code == rc
    assert r.verdict == json.loads(js)["verdict"]


@pytest.mark.parametrize("output", OUTPUTS)
def test_example_verdicts(data, output):
    r = numfid.check("matmul", "--in bf16 --acc fp32 --out bf16", a=data["a"], b=data["b"], c=data[output])
    assert r.verdict == EXPECTED[output], r.report
    assert r.consistent == (EXPECTED[output] == "consistent")
    assert sum(r.counts.values()) == r.elements == 64 * 48
    if r.verdict == "defect":
        assert r.counts["outside_deterministic"] > 0
        assert r.worst and r.worst[0]["class"] == "outside deterministic bound"
        assert r.exit_code == 1
    else:
        assert r.counts["outside_deterministic"] == 0 and r.exit_code == 0


def test_result_attributes(data):
    r = numfid.check_matmul(data["a"], data["b"], data["c_bf16acc"], "--in bf16 --acc fp32 --out bf16")
    assert set(r.worst[0]) >= {"index", "row", "col", "bits", "value", "exact", "error_ulps", "deterministic_bound",
                               "fraction_of_bound", "class"}
    assert r.worst[0]["fraction_of_bound"] > 1
    assert any(s["name"] == "narrow-accumulator" for s in r.signatures), r.signatures
    assert r.bounds["deterministic"]["sum_abs_coefficient"] > 0 and r.derivation
    assert r.reason in r.report and str(r) == r.report
    # The model ran under a plan: the predicted output, as patterns.
    p = numfid.check_matmul(data["a"], data["b"], data["c_blocked128_fp32acc"], "--in bf16 --out bf16 --plan blocked(128)")
    assert np.array_equal(p.predicted(bits=True), data["c_blocked128_fp32acc"])
    # C given as a nested list (read through np.asarray): the prediction takes the shape it was read in.
    values = numfid.convert(data["c_blocked128_fp32acc"], "fp32", from_="bf16")
    listed = numfid.check_matmul(data["a"], data["b"], values.tolist(),
                                 "--in bf16 --out bf16 --plan blocked(128)")
    assert np.array_equal(listed.predicted(bits=True), data["c_blocked128_fp32acc"])
    assert listed.predicted().shape == data["c_blocked128_fp32acc"].shape


def bf16_bits(x):
    """bf16 patterns of float32 arrays of bf16 values: the top half of the fp32 pattern
    (independent of numfid)."""
    x = np.ascontiguousarray(x, dtype=np.float32)
    return (x.view(np.uint32) >> 16).astype(np.uint16)


def bf16_values(bits):
    return (bits.astype(np.uint32) << 16).view(np.float32)


ARRAY_KINDS = {
    "float32": lambda x: np.asarray(x, np.float32),
    "float64": lambda x: np.asarray(x, np.float64),
    "uint16-bits": bf16_bits,
    "fortran-order": lambda x: np.asfortranarray(x),
    "strided": lambda x: np.repeat(x, 2, axis=1)[:, ::2],
    "transposed-view": lambda x: np.ascontiguousarray(x.T).T,
    "big-endian": lambda x: np.asarray(x, ">f4"),
}


@pytest.mark.parametrize("kind", list(ARRAY_KINDS))
def test_every_array_kind_gives_the_same_verdict(data, kind):
    a, b = data["a"], data["b"]
    c = bf16_values(data["c_bf16acc"])
    make = ARRAY_KINDS[kind]
    claim = "--in bf16 --acc fp32 --out bf16"
    want = numfid.check_matmul(a, b, data["c_bf16acc"], claim).to_json()
    A, B, C = make(a), make(b), make(c)
    if kind != "uint16-bits":
        assert not (kind in ("fortran-order", "strided", "transposed-view") and A.flags.c_contiguous)
    assert numfid.check_matmul(A, B, C, claim).to_json() == want


def test_float16_container(cli, tmp_path):
    # fp16 inputs in float16 arrays (their own container) against the CLI on the same files.
    rng = np.random.default_rng(1)
    a = rng.standard_normal((8, 40)).astype(np.float16)
    b = rng.standard_normal((40, 6)).astype(np.float16)
    c = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float16)  # via float64: two roundings at most
    for name, v in dict(a=a, b=b, c=c).items():
        np.save(tmp_path / f"{name}.npy", v)
    claim = "--in fp16 --acc fp32 --out fp16"
    r = numfid.check_matmul(a, b, c, claim)
    _, js, _ = cli_json(cli, tmp_path, "check", "matmul", "--a", tmp_path / "a.npy", "--b", tmp_path / "b.npy", "--c",
                        tmp_path / "c.npy", *claim.split())
    assert r.to_json() == js


def test_fp8_bit_patterns_in_uint8(cli, tmp_path):
    # fp8 E4M3 operands as uint8 patterns; C emulated by the CLI (an independent path).
    rng = np.random.default_rng(2)
    pats = np.array([p for p in range(256) if p & 0x7F != 0x7F], np.uint8)  # not NaN
    a = rng.choice(pats, (6, 32)).astype(np.uint8)
    b = rng.choice(pats, (32, 5)).astype(np.uint8)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    e = cli("emulate", "matmul", "--a", tmp_path / "a.npy", "--b", tmp_path / "b.npy", "--in", "fp8_e4m3", "--plan",
            "sequential", "--out", "bf16", "--output", tmp_path / "c.npy")
    assert e.returncode == 0, e.stderr
    c = np.load(tmp_path / "c.npy")
    claim = "--in fp8_e4m3 --acc fp32 --out bf16"
    r = numfid.check_matmul(a, b, c, claim)
    _, js, _ = cli_json(cli, tmp_path, "check", "matmul", "--a", tmp_path / "a.npy", "--b", tmp_path / "b.npy", "--c",
                        tmp_path / "c.npy", *claim.split())
    assert r.to_json() == js and r.verdict == "consistent"
    # The module's emulation is the CLI's, bit for bit.
    d = numfid.emulate("matmul", "--in fp8_e4m3 --plan sequential --out bf16", a=a, b=b, bits=True)
    assert np.array_equal(d, c)


def test_saturating_fp8_output(cli, tmp_path):
    # A GEMM whose E4M3 output cast saturates (Transformer Engine, .satfinite): 0x7e (448) where
    # the exact result is beyond the range. Legal under --saturate, a defect without it; the
    # module's emulation and verdict are the CLI's.
    rng = np.random.default_rng(5)
    a = (rng.standard_normal((6, 32)) * 16).astype(np.float32)
    b = (rng.standard_normal((32, 5)) * 4).astype(np.float32)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    c = numfid.emulate("matmul", "--in fp32 --plan pairwise --out fp8_e4m3 --saturate", a=a, b=b, bits=True)
    assert (c & 0x7F == 0x7E).any() and not (c & 0x7F == 0x7F).any()
    np.save(tmp_path / "c.npy", c)
    claim = "--in fp32 --acc fp32 --out fp8_e4m3 --saturate"
    r = numfid.check_matmul(a, b, c, claim)
    _, js, _ = cli_json(cli, tmp_path, "check", "matmul", "--a", tmp_path / "a.npy", "--b", tmp_path / "b.npy", "--c",
                        tmp_path / "c.npy", *claim.split())
    assert r.to_json() == js and r.verdict == "consistent", r.report
    assert numfid.check_matmul(a, b, c, "--in fp32 --acc fp32 --out fp8_e4m3").verdict == "defect"


def test_mixed_fp8_operands_on_a_tensor_core_profile(cli, tmp_path):
    # FP8 training's backward GEMM: E4M3 A x E5M2 B (uint8 patterns, no NaN/inf) on the profile's
    # mixed unit. The CLI's emulation (an independent process) is predicted bit for bit by the
    # module's check (--expect bit-exact) and equals the module's own emulation; tol bounds it.
    rng = np.random.default_rng(7)
    e4m3 = np.array([p for p in range(256) if p & 0x7F != 0x7F], np.uint8)  # not NaN
    e5m2 = np.array([p for p in range(256) if p & 0x7C != 0x7C], np.uint8)  # not inf/NaN
    a = rng.choice(e4m3, (4, 64)).astype(np.uint8)
    b = rng.choice(e5m2, (64, 3)).astype(np.uint8)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    claim = "--in fp8_e4m3 --in-b fp8_e5m2 --profile nvidia-h100-tc --out fp32"
    e = cli("emulate", "matmul", "--a", tmp_path / "a.npy", "--b", tmp_path / "b.npy", *claim.split(), "--output",
            tmp_path / "c.npy")
    assert e.returncode == 0, e.stderr
    c = np.load(tmp_path / "c.npy")
    r = numfid.check_matmul(a, b, c, claim + " --expect bit-exact")
    assert r.verdict == "consistent", r.text()
    d = numfid.emulate("matmul", claim, a=a, b=b)
    assert np.array_equal(d.view(np.uint32), c.view(np.uint32))
    with pytest.raises(ValueError, match="no instruction multiplies"):
        numfid.emulate("matmul", "--in bf16 --in-b fp16 --profile nvidia-h100-tc --out fp32",
                       a=np.zeros((2, 4), np.float32), b=np.zeros((4, 2), np.float32))


def test_dot_sum_and_row_ops_identical_to_cli(cli, tmp_path):
    rng = np.random.default_rng(3)
    x = bf16_values(bf16_bits(rng.standard_normal((5, 64)).astype(np.float32)))
    y = bf16_values(bf16_bits(rng.standard_normal((5, 64)).astype(np.float32)))
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "y.npy", y)
    cases = []
    # dot: C from the CLI's emulation; sum: C from float64 (legal within the bound).
    e = cli("emulate", "dot", "--a", tmp_path / "x.npy", "--b", tmp_path / "y.npy", "--in", "bf16", "--plan", "pairwise",
            "--out", "fp32", "--output", tmp_path / "d.npy")
    assert e.returncode == 0, e.stderr
    cases.append(("dot", "--in bf16 --out fp32", dict(a=x, b=y, c=np.load(tmp_path / "d.npy")),
                  ["--a", tmp_path / "x.npy", "--b", tmp_path / "y.npy", "--c", tmp_path / "d.npy"], {}))
    s = x.astype(np.float64).sum(axis=1).astype(np.float32)
    np.save(tmp_path / "s.npy", s)
    cases.append(("sum", "--in bf16 --out fp32", dict(x=x, c=s), ["--x", tmp_path / "x.npy", "--c", tmp_path / "s.npy"],
                  {"axis": 1}))
    ex = np.exp(x.astype(np.float64) - x.max(axis=1, keepdims=True))
    sm = (ex / ex.sum(axis=1, keepdims=True)).astype(np.float32)
    np.save(tmp_path / "sm.npy", sm)
    cases.append(("softmax", "--in bf16 --out fp32 --ulps 4", dict(x=x, c=sm),
                  ["--x", tmp_path / "x.npy", "--c", tmp_path / "sm.npy"], {}))
    for op, claim, operands, files, opts in cases:
        r = numfid.check(op, claim, **operands, **opts)
        extra = [t for k, v in opts.items() for t in (f"--{k}", str(v))]
        _, js, stdout = cli_json(cli, tmp_path, "check", op, *files, *claim.split(), *extra)
        assert r.to_json() == js, op
        assert r.report == stdout, op
        assert r.verdict == "consistent", r.report


@pytest.mark.parametrize("args", [
    ("matmul", "--in bf16 --acc fp32 --out bf16"),
    ("sum", "--in bf16 --out fp32"),
    ("matmul", "--in bf16 --out bf16 --profile trn2"),
    ("softmax", "--in fp32 --compute fp32 --out bf16"),
    ("layernorm", "--in bf16 --compute fp32 --out bf16"),
])
@pytest.mark.parametrize("k", [1, 128, 4096])
def test_tol_identical_to_cli(cli, args, k):
    op, claim = args
    t = numfid.tol(op, claim, k=k)
    assert t.report == cli("tol", op, "--k", k, *claim.split()).stdout
    assert t.to_json() == cli("tol", op, "--k", k, "--json", *claim.split()).stdout
    assert t.k == k and t.op == op


def test_tol_equivalent_is_none_for_an_exact_claim():
    # An integer GEMM's bound is exact: no rtol/atol to state, but the attribute is there (None),
    # so code written for float claims reads it (it raised AttributeError).
    assert numfid.tol("matmul", "--in int8 --acc int32 --out int32", 64).equivalent is None
    assert numfid.tol("matmul", "--in bf16 --acc fp32 --out bf16", 64).equivalent is not None


def test_tol_of_a_row_op_takes_the_row_options_and_says_its_bounds_are_per_element(cli):
    claim = "--in bf16 --compute bf16 --out bf16"
    t = numfid.tol("layernorm", claim, 1024, variance="rowwise-moments(16)", norm_form="shifted", eps=1e-6)
    assert t.per_element is True and t.k == 1024 and "rowwise-moments" in t.claim
    assert t.report == cli("tol", "layernorm", "--k", 1024, *claim.split(), "--variance", "rowwise-moments(16)",
                           "--norm-form", "shifted", "--eps", "1e-06").stdout
    with pytest.raises(ValueError, match="give the arithmetic with --compute"):
        numfid.tol("softmax", "--in fp32 --out fp32 --ulps 1", 16)
    with pytest.raises(ValueError, match="tol softmax: norm_form= does not apply to softmax"):
        numfid.tol("softmax", "--in fp32 --compute fp32 --out fp32", 16, norm_form="shifted")
    # Options an op does not take are refused, as by the CLI (one library call serves both).
    # (The messages name the keywords: the library's --eps is eps= here.)
    for op, claim, kw, flag in (("matmul", "--in bf16 --out bf16", {"eps": 0.1}, "eps="),
                                ("exp", "--in bf16 --compute fp32 --out bf16", {"softmax": "online"}, "softmax="),
                                ("layernorm", "--in bf16 --compute fp32 --out bf16", {"addend": True}, "--addend"),
                                ("softmax", "--in bf16 --compute fp32 --out bf16", {"ref_profile": "trn2"}, "ref_profile=")):
        with pytest.raises(ValueError, match=f"tol {op}: {flag} does not apply to {op}"):
            numfid.tol(op, claim, 16, **kw)
    # A claim option of the other kind of op is refused by the library (check and tol alike).
    with pytest.raises(ValueError, match="tol layernorm: --acc belongs to a reduction's claim"):
        numfid.tol("layernorm", "--in bf16 --acc bf16 --compute fp32 --out bf16", 16)
    with pytest.raises(ValueError, match="tol matmul: --compute states a row or elementwise op's arithmetic"):
        numfid.tol("matmul", "--in bf16 --compute fp32 --out bf16", 16)
    x = np.zeros((2, 4), np.float32)
    with pytest.raises(ValueError, match="check softmax: --plan belongs to a reduction's claim"):
        numfid.check("softmax", "--in fp32 --plan sequential --compute fp32 --out fp32", x=x, c=x)
    with pytest.raises(ValueError, match="check matmul: --compute states a row or elementwise op's arithmetic"):
        numfid.check_matmul(x, x.T, np.zeros((2, 2), np.float32), "--in fp32 --compute fp32 --out fp32")


def test_a_profile_refuses_accumulator_options_but_a_reference_profile_replaces_them(cli, data):
    with pytest.raises(ValueError, match="--acc: profile trn2 states the accumulation itself"):
        numfid.check_matmul(data["a"], data["b"], data["c_sequential_fp32acc"], "--in bf16 --acc fp16 --out bf16 --profile trn2")
    # The target's own --acc does not carry over into the reference's profile claim (CLI alike).
    claim = "--in bf16 --acc fp32 --out bf16"
    t = numfid.tol("matmul", claim, k=256, ref_profile="trn2")
    assert t.report == cli("tol", "matmul", "--k", 256, *claim.split(), "--ref-profile", "trn2").stdout
    r = numfid.check_matmul(data["a"], data["b"], data["c_sequential_fp32acc"], claim, ref=data["c_blocked128_fp32acc"],
                            ref_profile="cpu-sequential")
    assert r.verdict in ("consistent", "suspicious"), r.report


def test_cross_platform_options_identical_to_cli(cli, data, data_dir, tmp_path):
    claim = "--in bf16 --out bf16 --profile trn2"
    t = numfid.tol("matmul", claim, k=512, ref_profile="nvidia-h100-tc")
    assert t.report == cli("tol", "matmul", "--k", 512, *claim.split(), "--ref-profile", "nvidia-h100-tc").stdout
    r = numfid.check_matmul(data["a"], data["b"], data["c_sequential_fp32acc"], claim, ref=data["c_blocked128_fp32acc"],
                            ref_profile="cpu-sequential")
    _, js, _ = cli_json(cli, tmp_path, "check", "matmul", "--a", data_dir / "a.npy", "--b", data_dir / "b.npy", "--c",
                        data_dir / "c_sequential_fp32acc.npy", *claim.split(), "--ref",
                        data_dir / "c_blocked128_fp32acc.npy", "--ref-profile", "cpu-sequential")
    assert r.to_json() == js


def test_a_target_profile_refuses_accumulator_options_like_the_cli(cli):
    claim = "--in bf16 --acc fp16 --out bf16"
    with pytest.raises(ValueError, match="--acc: profile trn2 states the accumulation itself"):
        numfid.tol("matmul", claim, k=256, target_profile="trn2")
    r = cli("tol", "matmul", "--k", 256, *claim.split(), "--target-profile", "trn2")
    assert r.returncode == 2 and "--acc: profile trn2 states the accumulation itself" in r.stderr
    # Without the conflict both give the same derivation.
    claim = "--in bf16 --out bf16"
    t = numfid.tol("matmul", claim, k=256, ref_profile="nvidia-h100-tc", target_profile="trn2")
    assert t.report == cli("tol", "matmul", "--k", 256, *claim.split(), "--ref-profile", "nvidia-h100-tc",
                           "--target-profile", "trn2").stdout
    # A claim naming its own profile beside target_profile names the target twice: refused by
    # both (the claim's profile was silently replaced).
    claim = "--in bf16 --out bf16 --profile cpu-sequential"
    with pytest.raises(ValueError, match="both name the target platform"):
        numfid.tol("matmul", claim, k=256, ref_profile="nvidia-h100-tc", target_profile="trn2")
    r = cli("tol", "matmul", "--k", 256, *claim.split(), "--ref-profile", "nvidia-h100-tc", "--target-profile", "trn2")
    assert r.returncode == 2 and "both name the target platform" in r.stderr


def test_a_row_op_along_another_axis_is_torchs_dim(cli, tmp_path):
    torch = pytest.importorskip("torch")
    # fp32: torch 1.13's bf16 softmax along a dim other than the last rounds its intermediates in
    # bf16 (consistent with --compute bf16 only; docs/verdict.md §8.3).
    x = torch.from_numpy(np.random.default_rng(3).normal(0, 2, (3, 6, 5)).astype(np.float32))
    claim = "--in fp32 --compute fp32 --out fp32"
    for dim in (0, 1, -1):
        c = torch.softmax(x, dim)
        r = numfid.check("softmax", claim, x=x, c=c, axis=dim)
        assert r.verdict == "consistent", r.report
        other = 2 if dim in (0, 1) else 0
        assert numfid.check("softmax", claim, x=x, c=c, axis=other).verdict == "defect"
    # The CLI's --axis gives the same JSON.
    c = torch.softmax(x, 0)
    np.save(tmp_path / "x.npy", x.numpy())
    np.save(tmp_path / "c.npy", c.numpy())
    _, js, _ = cli_json(cli, tmp_path, "check", "softmax", "--x", tmp_path / "x.npy", "--c", tmp_path / "c.npy",
                        *claim.split(), "--axis", 0)
    assert numfid.check("softmax", claim, x=x, c=c, axis=0).to_json() == js
    with pytest.raises(ValueError, match=r"axis=3 out of range for shape \[3, 6, 5\]"):
        numfid.check("softmax", claim, x=x, c=c, axis=3)


def test_a_scalar_is_not_a_row():
    # A 0-d x reached the library as [1] (a one-element row: "consistent"); it is refused as by the CLI.
    x = np.float32(1.0)
    with pytest.raises(ValueError, match="nothing to check: x is 0-d, and softmax works on rows"):
        numfid.check("softmax", "--in fp32 --compute fp32 --out fp32", x=x, c=np.float32(1.0))
    assert numfid.check("exp", "--in fp32 --compute fp32 --out fp32", x=x, c=np.exp(x)).verdict == "consistent"
    with pytest.raises(ValueError, match="shape mismatch"):
        numfid.check("exp", "--in fp32 --compute fp32 --out fp32", x=x, c=np.exp(x).reshape(1))


def test_numpy_sums_a_strided_axis_in_order():
    # np.sum is pairwise along the contiguous axis only: along axis 0 of a C-order array it adds
    # the rows one by one — numpy's own output is the sequential plan's, bit for bit, and the
    # numpy plan there says why it disagrees.
    x = np.random.default_rng(5).random((300, 24)).astype(np.float32)
    for axis, order in ((0, "sequential"), (1, "numpy")):
        r = numfid.check("sum", f"--in fp32 --plan {order} --out fp32 --expect bit-exact", x=x, c=x.sum(axis), axis=axis)
        assert r.verdict == "consistent", r.report
    r = numfid.check("sum", "--in fp32 --plan numpy --out fp32 --expect bit-exact", x=x, c=x.sum(0), axis=0)
    assert r.verdict == "defect"
    assert "note: numpy sums a strided axis (axis 0 of a C-order array) in order" in r.report
    assert "note: the numpy plan is np.sum along a contiguous axis" in r.report
    r = numfid.check("sum", "--in fp32 --plan numpy --out fp32 --expect bit-exact", x=x, c=x.sum(1), axis=1)
    assert "strided" not in r.report
    # emulate says the same (a warning; the CLI on stderr), and emulates the plan as named.
    with pytest.warns(UserWarning, match="numpy adds its slices one by one there") as warned:
        e = numfid.emulate("sum", "--in fp32 --plan numpy --out fp32", x=x, axis=0)
    assert warned[0].filename == __file__  # the caller's line, not numfid's wrapper
    assert np.array_equal(e, numfid.emulate("sum", "--in fp32 --plan numpy --out fp32", x=x.T.copy(), axis=1))
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert np.array_equal(numfid.emulate("sum", "--in fp32 --plan numpy --out fp32", x=x, axis=1), x.sum(1))


def test_addend_at_identical_to_cli(cli, data, data_dir, tmp_path):
    # --addend-at output (torch.addmm's epilogue with a bf16 C): emulate and check through the
    # module and the CLI give the same output, JSON and report. C = -(the bf16 result of A·B),
    # the last bit of every third pattern flipped (tests/cli/data/make_addend_cancel.py).
    c = data["c_sequential_fp32acc"]
    addend = ((c ^ 0x8000) ^ (np.arange(c.size).reshape(c.shape) % 3 == 0)).astype(np.uint16)
    np.save(tmp_path / "addend.npy", addend)
    claim = "--in bf16 --out bf16 --plan sequential --addend-at output"
    d = numfid.emulate("matmul", claim, a=data["a"], b=data["b"], c=addend, bits=True)
    e = cli("emulate", "matmul", "--a", data_dir / "a.npy", "--b", data_dir / "b.npy", "--c", tmp_path / "addend.npy",
            *claim.split(), "--output", tmp_path / "d.npy")
    assert e.returncode == 0, e.stderr
    assert np.array_equal(np.load(tmp_path / "d.npy"), d)
    r = numfid.check_matmul(data["a"], data["b"], d, claim, addend=addend)
    rc, js, stdout = cli_json(cli, tmp_path, "check", "matmul", "--a", data_dir / "a.npy", "--b", data_dir / "b.npy",
                              "--c", tmp_path / "d.npy", "--addend", tmp_path / "addend.npy", *claim.split())
    assert r.to_json() == js and r.report == stdout and r.exit_code == rc == 0
    assert r.verdict == "consistent", r.report
    # The same output under the start claim (the addend as the sum's first term): a false alarm.
    s = numfid.check_matmul(data["a"], data["b"], d, "--in bf16 --out bf16", addend=addend, addend_format="bf16")
    assert s.verdict == "defect"
    t = numfid.tol("matmul", "--in bf16 --out bf16 --addend-at end", k=512, addend=True)
    assert t.report == cli("tol", "matmul", "--k", 512, "--addend", "--in", "bf16", "--out", "bf16", "--addend-at",
                           "end").stdout
    assert "--addend-at end" in t.report
    with pytest.raises(ValueError, match="--addend-at output says where an addend enters the sum"):
        numfid.check_matmul(data["a"], data["b"], d, claim)


def test_masked_row_identical_to_cli(cli, tmp_path):
    # A guarded softmax (PyTorch >= 2.5's _safe_softmax: torch.softmax, then 0 across every fully
    # masked row; torch 1.13 has no _safe_softmax, so the guard is applied here as its source
    # writes it) is consistent under masked_row="zero" and a defect under the default, which names
    # the option; the CLI gives the same JSON.
    torch = pytest.importorskip("torch")
    x = torch.from_numpy(np.random.default_rng(9).normal(0, 3, (5, 24)).astype(np.float32))
    x[1] = -float("inf")
    x[3, ::2] = -float("inf")
    plain = torch.softmax(x, -1)
    guarded = torch.where(torch.isneginf(x).all(-1, keepdim=True), torch.zeros(()), plain)
    claim = "--in fp32 --compute fp32 --out fp32"
    r = numfid.check("softmax", claim, x=x, c=guarded, masked_row="zero")
    assert r.verdict == "consistent", r.report
    assert numfid.check("softmax", claim, x=x, c=plain).verdict == "consistent"
    assert numfid.check("softmax", claim, x=x, c=plain, masked_row="zero").verdict == "defect"
    d = numfid.check("softmax", claim, x=x, c=guarded)
    assert d.verdict == "defect" and d.counts["outside_deterministic"] == 24
    assert d.signatures[0]["name"] == "masked-row-zero", d.signatures
    np.save(tmp_path / "x.npy", x.numpy())
    np.save(tmp_path / "c.npy", guarded.numpy())
    rc, js, _ = cli_json(cli, tmp_path, "check", "softmax", "--x", tmp_path / "x.npy", "--c", tmp_path / "c.npy",
                         *claim.split(), "--masked-row", "zero")
    assert rc == 0 and r.to_json() == js
    with pytest.raises(TypeError, match=r"option masked_row= does not apply to it"):
        numfid.check("log_softmax", claim, x=x, c=plain, masked_row="zero")
    with pytest.raises(ValueError, match=r"^masked_row='zeros': unknown choice \(valid: nan, zero\)"):
        numfid.check("softmax", claim, x=x, c=guarded, masked_row="zeros")


def test_truncating_output_under_rtz_identical_to_cli(cli, tmp_path):
    # A bf16 GEMM output truncated from the exact result (the bits below bf16 cleared: what a
    # truncating cast does) is bit-exact in every element under --out-rounding rtz; the same
    # result rounded to nearest is a proven defect under that claim (the directed rounding's
    # one-sided bound: docs/verdict.md §2) and consistent under the default. The CLI agrees.
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(5)
    a = torch.randn(16, 96, generator=g).bfloat16()
    b = torch.randn(96, 12, generator=g).bfloat16()
    exact = (a.double() @ b.double()).float()  # 96 products of 8-bit significands: fp32 holds each sum
    truncated = (exact.view(torch.int32) & ~0xFFFF).view(torch.float32).bfloat16()
    nearest = exact.bfloat16()
    claim = "--in bf16 --acc fp32 --out bf16 --out-rounding rtz"
    r = numfid.check_matmul(a, b, truncated, claim)
    assert r.verdict == "consistent" and r.counts["bit_exact"] == 16 * 12, r.report
    d = numfid.check_matmul(a, b, nearest, claim)
    assert d.verdict == "defect" and d.counts["outside_deterministic"] > 16, d.report
    assert numfid.check_matmul(a, b, nearest, "--in bf16 --acc fp32 --out bf16").verdict == "consistent"
    for name, t in (("a", a), ("b", b), ("c", nearest)):
        np.save(tmp_path / f"{name}.npy", t.float().numpy())
    rc, js, _ = cli_json(cli, tmp_path, "check", "matmul", "--a", tmp_path / "a.npy", "--b", tmp_path / "b.npy",
                         "--c", tmp_path / "c.npy", *claim.split())
    assert rc == 1 and d.to_json() == js


def test_stacked_a_is_the_matmul_of_its_rows():
    # torch.matmul of activations [batch, seq, K] and a weight K x N: the same report as the rows
    # reshaped to [batch·seq, K] but for where elements are placed (their position in the stack,
    # and the stack's matrices); emulate keeps the stack's shape; broadcasting is refused.
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(8)
    a = torch.randn(2, 8, 64, generator=g).bfloat16()
    b = torch.randn(64, 16, generator=g).bfloat16()
    c = torch.matmul(a.float(), b.float()).bfloat16()
    claim = "--in bf16 --acc fp32 --out bf16"
    r = numfid.check_matmul(a, b, c, claim)
    assert r.verdict == "consistent", r.report
    stacked = json.loads(r.to_json())
    flat = json.loads(numfid.check_matmul(a.reshape(16, 64), b, c.reshape(16, 16), claim).to_json())
    assert stacked.pop("matrices") == {"count": 2, "outside_deterministic": []}
    for s, f in zip(stacked["worst"], flat["worst"]):
        assert s.pop("position") == [s["index"] // (8 * 16), s["index"] // 16 % 8, s["index"] % 16]
        assert f.pop("position") == [f["row"], f["col"]]
    assert stacked == flat
    e = numfid.emulate("matmul", "--in bf16 --out bf16 --plan sequential", a=a, b=b)
    assert e.shape == (2, 8, 16)
    with pytest.raises(ValueError, match=r"broadcasting is not taken"):
        numfid.check_matmul(a, torch.randn(1, 64, 16).bfloat16(), c, claim)


def test_batch_of_b_is_each_matrix_times_its_own():
    # Attention scores per head: torch.matmul(q, k.transpose(-1, -2)) over [batch, heads] (a
    # strided view of k as B), each head's Q times its own Kᵀ; the same verdict from the CLI's
    # library path per element as each head checked alone; heads paired wrongly is a defect.
    torch = pytest.importorskip("torch")
    g = torch.Generator().manual_seed(9)
    q = torch.randn(2, 3, 8, 64, generator=g).bfloat16()
    k = torch.randn(2, 3, 16, 64, generator=g).bfloat16()
    kt = k.transpose(-1, -2)
    s = torch.matmul(q.float(), kt.float()).bfloat16()
    claim = "--in bf16 --acc fp32 --out bf16"
    r = numfid.check_matmul(q, kt, s, claim)
    assert r.verdict == "consistent", r.report
    assert r.elements == 2 * 3 * 8 * 16
    heads = [numfid.check_matmul(q[i, j], kt[i, j], s[i, j], claim) for i in range(2) for j in range(3)]
    assert r.counts == {key: sum(h.counts[key] for h in heads) for key in r.counts}
    wrong = torch.matmul(q.float(), kt.flip(1).float()).bfloat16()  # heads reversed
    assert numfid.check_matmul(q, kt, wrong, claim).verdict == "defect"
    # One broken head: located at [b, h, i, j] and named among the stack's matrices.
    broken = s.clone()
    broken[1, 0, 5, 9] += 4
    d = numfid.check_matmul(q, kt, broken, claim)
    assert d.verdict == "defect" and d.worst[0]["position"] == [1, 0, 5, 9], d.report
    assert d.matrices == {"count": 6, "outside_deterministic": [{"position": [1, 0], "elements": 1}]}
    assert "[1, 0, 5, 9]" in d.report
    assert r.matrices == {"count": 6, "outside_deterministic": []}
    assert numfid.check_matmul(q[0, 0], kt[0, 0], s[0, 0], claim).matrices is None
    e = numfid.emulate("matmul", "--in bf16 --out bf16 --plan sequential", a=q, b=kt)
    assert e.shape == (2, 3, 8, 16)
    for i in range(2):
        for j in range(3):
            one = numfid.emulate("matmul", "--in bf16 --out bf16 --plan sequential", a=q[i, j], b=kt[i, j])
            assert torch.equal(torch.as_tensor(np.asarray(e)[i, j]), torch.as_tensor(np.asarray(one)))


def test_sum_under_a_plan_predicts_like_matmul():
    # check('sum') with a --plan (or --profile) runs the model as matmul and dot do: .model and
    # .predicted() are the plan's sum (they were None unless --expect bit-exact was given).
    x = np.random.default_rng(7).standard_normal((4, 100)).astype(np.float32)
    c = np.cumsum(x, -1, dtype=np.float32)[:, -1]
    r = numfid.check("sum", "--in fp32 --out fp32 --plan sequential", x=x, c=c)
    assert r.verdict == "consistent" and r.model is not None, r.report
    assert np.array_equal(r.predicted(), numfid.emulate("sum", "--in fp32 --out fp32 --plan sequential", x=x))
    assert np.array_equal(r.predicted(), c)


def test_rmsnorm_without_eps_is_a_probable_defect(cli, tmp_path):
    """The row-scale rule (docs/verdict.md §8.4) through the module: numpy's fp32 rmsnorm without
    eps leans every row's scale by eps/(2·mean square), inside the deterministic bound; the same
    kernel with eps is consistent. Identical to the CLI's verdict."""
    rng = np.random.default_rng(17)
    x = rng.standard_normal((16, 512)).astype(np.float32)
    ms = (x * x).mean(axis=1, keepdims=True, dtype=np.float32)
    legal = x * (np.float32(1) / np.sqrt(ms + np.float32(1e-5)))
    no_eps = x * (np.float32(1) / np.sqrt(ms))
    claim = "--in fp32 --compute fp32 --out fp32"
    ok = numfid.check("rmsnorm", claim, x=x, c=legal)
    assert ok.verdict == "consistent", ok.report
    bad = numfid.check("rmsnorm", claim, x=x, c=no_eps)
    assert bad.verdict == "defect", bad.report
    assert json.loads(bad.to_json())["evidence"] == "probable"
    assert json.loads(bad.to_json())["false_alarm_probability"] <= 1e-9
    assert "rows' scales lean" in bad.reason
    np.save(tmp_path / "x.npy", x)
    np.save(tmp_path / "c.npy", no_eps)
    rc, js, _ = cli_json(cli, tmp_path, "check", "rmsnorm", "--x", tmp_path / "x.npy", "--c", tmp_path / "c.npy",
                         *claim.split())
    assert rc == 1
    assert bad.to_json() == js
