"""Bad input raises ValueError (bad values, claims, shapes, formats, profiles) or TypeError (a
wrong kind of argument), with the message the CLI prints after "numfid: " for the same input.
Where the CLI names a file ("--a: a.npy: ..."), the module names the argument ("a: ...")."""

import numpy as np
import pytest

import numfid
from conftest import error_text


def save(tmp_path, **arrays):
    paths = {}
    for name, v in arrays.items():
        paths[name] = tmp_path / f"{name}.npy"
        np.save(paths[name], v)
    return paths


@pytest.mark.parametrize("claim", [
    "--in bf17 --out bf16",
    "--in bf16",
    "--in bf16 --out bf16 --profile no-such-profile",
    "--in bf16 --out bf16 --plan blocked(0)",
    "--in bf16 --out bf16 --acc-rounding sideways",
    "--in bf16 --out bf16 --confidence 2",
])
def test_bad_claim_same_message_as_cli(cli, data, data_dir, claim):
    with pytest.raises(ValueError) as e:
        numfid.check_matmul(data["a"], data["b"], data["c_bf16acc"], claim)
    r = cli("check", "matmul", "--a", data_dir / "a.npy", "--b", data_dir / "b.npy", "--c", data_dir / "c_bf16acc.npy",
            *claim.split())
    if "--out" not in claim:  # the CLI's own parser asks for the required option first
        assert "--out" in str(e.value) and "--out" in r.stderr
        return
    assert str(e.value) == error_text(r)


def test_value_not_representable_same_message_as_cli(cli, data, tmp_path):
    a = data["a"].copy()
    a[3, 5] = 0.1  # not a bf16 value
    p = save(tmp_path, a=a)
    with pytest.raises(ValueError) as e:
        numfid.check_matmul(a, data["b"], data["c_bf16acc"], "--in bf16 --out bf16")
    np.save(tmp_path / "b.npy", data["b"])
    np.save(tmp_path / "c.npy", data["c_bf16acc"])
    r = cli("check", "matmul", "--a", p["a"], "--b", tmp_path / "b.npy", "--c", tmp_path / "c.npy", "--in", "bf16",
            "--out", "bf16")
    want = error_text(r)
    prefix = f"--a: {p['a']}: "
    assert want.startswith(prefix)
    assert str(e.value) == "a: " + want[len(prefix):]
    assert "element 3" in str(e.value) or "[3, 5]" in str(e.value)


def test_shape_mismatch_same_message_as_cli(cli, data, tmp_path):
    p = save(tmp_path, a=data["a"], b=data["b"], c=data["c_bf16acc"][:, :40])
    with pytest.raises(ValueError) as e:
        numfid.check_matmul(data["a"], data["b"], data["c_bf16acc"][:, :40], "--in bf16 --out bf16")
    r = cli("check", "matmul", "--a", p["a"], "--b", p["b"], "--c", p["c"], "--in", "bf16", "--out", "bf16")
    want = error_text(r)
    for name, path in p.items():
        want = want.replace(f"({path})", f"({name})")
    assert str(e.value) == want


def test_pattern_too_wide_and_void_width(data):
    with pytest.raises(ValueError, match=r"pattern 0x40 has bits outside the 6-bit format fp6_e3m2"):
        numfid.check_matmul(np.full((2, 2), 0x40, np.uint8), np.zeros((2, 2), np.uint8), np.zeros((2, 2), np.uint16),
                            "--in fp6_e3m2 --out bf16")
    with pytest.raises(ValueError, match="opaque container"):
        numfid.check_matmul(np.zeros((2, 2), "V2"), np.zeros((2, 2), "V2"), np.zeros((2, 2), np.uint16),
                            "--in fp8_e4m3 --out bf16")


def test_wrong_kinds_of_argument_are_type_errors(data):
    a, b, c = data["a"], data["b"], data["c_bf16acc"]
    with pytest.raises(TypeError, match="dtype int64 is not supported"):
        numfid.check_matmul(a.astype(np.int64), b, c, "--in bf16 --out bf16")
    with pytest.raises(TypeError, match="dtype complex64"):
        numfid.check_matmul(a.astype(np.complex64), b, c, "--in bf16 --out bf16")
    with pytest.raises(TypeError, match="unexpected operand 'q'"):
        numfid.check("matmul", "--in bf16 --out bf16", a=a, b=b, c=c, q=a)
    with pytest.raises(TypeError, match="missing operand b"):
        numfid.check("matmul", "--in bf16 --out bf16", a=a, c=c)
    with pytest.raises(TypeError, match="claim is its text form"):
        numfid.check("matmul", ["--in", "bf16"], a=a, b=b, c=c)
    with pytest.raises(TypeError, match="from_="):
        numfid.convert(np.zeros(3, np.uint16), "fp32")
    with pytest.raises(TypeError):
        numfid.tol("matmul", "--in bf16 --out bf16", k="4096")


def test_unknown_op_rounding_format_and_k(cli):
    with pytest.raises(ValueError, match="unknown op 'matmull'"):
        numfid.check("matmull", "--in bf16 --out bf16", x=np.zeros(2, np.float32), c=np.zeros(2, np.float32))
    # A misspelt op with a GEMM's operands is an unknown op, not "unexpected operand 'a'".
    z = np.zeros((2, 2), np.float32)
    with pytest.raises(ValueError, match="unknown op 'matmult' \\(known: matmul, dot, sum, softmax, "):
        numfid.check("matmult", "--in bf16 --out bf16", a=z, b=z, c=z)
    # tol and emulate name every op they take (tol said "matmul, dot or sum" though it takes the
    # row ops; emulate "matmul or dot" though it takes sum).
    with pytest.raises(ValueError, match="tol: unknown op 'conv' \\(known: matmul, dot, sum, softmax, .*rsqrt\\)"):
        numfid.tol("conv", "--in bf16 --out bf16", 64)
    with pytest.raises(ValueError, match="unknown op 'conv' \\(matmul, dot or sum\\)"):
        numfid.emulate("conv", "--in bf16 --out bf16 --plan sequential", a=z, b=z)
    with pytest.raises(ValueError, match="rounding"):
        numfid.convert(np.zeros(2, np.float32), "bf16", rounding="sideways")
    with pytest.raises(ValueError, match="unknown format 'bf17'"):
        numfid.convert(np.zeros(2, np.float32), "bf17")
    # The CLI's message, naming the Python argument k= where the CLI names --k.
    with pytest.raises(ValueError) as e:
        numfid.tol("matmul", "--in bf16 --out bf16", k=0)
    want = error_text(cli("tol", "matmul", "--k", 0, "--in", "bf16", "--out", "bf16"))
    assert want.startswith("--k: ")
    assert str(e.value) == "k=0: " + want[len("--k: "):]
    with pytest.raises(ValueError, match="^k=-3: the row length must be a positive integer"):
        numfid.tol("layernorm", "--in bf16 --compute fp32 --out bf16", -3)
    with pytest.raises(ValueError, match="give exactly one of --plan P or --profile NAME"):
        numfid.emulate("matmul", "--in bf16 --out bf16", a=np.zeros((2, 2), np.float32), b=np.zeros((2, 2), np.float32))


def test_an_output_onto_an_input_is_refused_and_the_input_kept(cli, data_dir, tmp_path):
    # `--json a.npy` replaced the operand with the verdict; `emulate --output ./b.npy` with the result.
    import shutil
    for name in ("a.npy", "b.npy", "c_sequential_fp32acc.npy"):
        shutil.copy(data_dir / name, tmp_path / name)
    a, b, c = (tmp_path / n for n in ("a.npy", "b.npy", "c_sequential_fp32acc.npy"))
    before = {p: p.read_bytes() for p in (a, b, c)}
    claim = ["--in", "bf16", "--acc", "fp32", "--out", "bf16"]
    cases = [
        (["check", "matmul", "--a", a, "--b", b, "--c", c, *claim, "--json", a], "--json"),
        (["check", "matmul", "--a", a, "--b", b, "--c", c, *claim, "--json", tmp_path / "." / "c_sequential_fp32acc.npy"],
         "--json"),
        (["emulate", "matmul", "--a", a, "--b", b, "--in", "bf16", "--out", "bf16", "--plan", "sequential",
          "--output", tmp_path / "sub" / ".." / "b.npy"], "--output"),
        (["check", "softmax", "--x", a, "--c", a, "--in", "bf16", "--compute", "fp32", "--out", "bf16", "--json", a],
         "--json"),
    ]
    (tmp_path / "sub").mkdir()
    for args, option in cases:
        r = cli(*args)
        assert r.returncode == 2, (args, r.stdout, r.stderr)
        assert f"{option} " in r.stderr and "writing it would replace that file" in r.stderr, r.stderr
        assert r.stdout == ""
    for p, content in before.items():
        assert p.read_bytes() == content, f"{p} was changed"
    # A link to an input is the input too.
    link = tmp_path / "link.npy"
    link.symlink_to(a)
    r = cli("check", "matmul", "--a", a, "--b", b, "--c", c, *claim, "--json", link)
    assert r.returncode == 2 and "is the file of --a" in r.stderr
    assert a.read_bytes() == before[a]
    # A gate's report onto its gate file, or two reports onto one file.
    gate = tmp_path / "g.yaml"
    gate.write_text("version: 1\ndefaults:\n  claim: --in bf16 --acc fp32 --out bf16\ncases:\n  - name: m\n    op: matmul\n"
                    "    a: a.npy\n    b: b.npy\n    c: c_sequential_fp32acc.npy\n")
    text = gate.read_text()
    r = cli("gate", "run", gate, "--markdown", tmp_path / "." / "g.yaml")
    assert r.returncode == 2 and "--markdown" in r.stderr and "is a file the gate reads" in r.stderr, r.stderr
    r = cli("gate", "run", gate, "--json", tmp_path / "a.npy")  # an operand of a case
    assert r.returncode == 2 and "is a file the gate reads" in r.stderr, r.stderr
    r = cli("gate", "run", gate, "--json", tmp_path / "r.json", "--junit", tmp_path / "r.json")
    assert r.returncode == 2 and "is the file of --junit" in r.stderr, r.stderr
    assert gate.read_text() == text and not (tmp_path / "r.json").exists()
    assert cli("gate", "run", gate, "--json", tmp_path / "r.json").returncode == 0


def test_options_an_op_does_not_take_are_refused(data):
    a, b, c = data["a"], data["b"], data["c_sequential_fp32acc"]
    claim = "--in bf16 --acc fp32 --out bf16"
    for kwargs in ({"eps": 1e-3}, {"axis": 0}, {"variance": "welford"}, {"softmax": "online"}, {"norm_form": "shifted"},
                   {"param_format": "fp32"}, {"masked_row": "zero"}):
        with pytest.raises(TypeError, match=f"numfid.check\\('matmul'\\): option {next(iter(kwargs))}= does not apply"):
            numfid.check_matmul(a, b, c, claim, **kwargs)
    x = np.zeros((2, 4), np.float32)
    with pytest.raises(TypeError, match=r"option variance= does not apply to it \(it takes axis, softmax, masked_row\)"):
        numfid.check("softmax", "--in fp32 --compute fp32 --out fp32", x=x, c=x, variance="welford")
    with pytest.raises(TypeError, match="option axis= does not apply to it"):
        numfid.check("exp", "--in fp32 --compute fp32 --out fp32", x=x, c=np.ones_like(x), axis=0)
    with pytest.raises(TypeError, match="option ref_profile= does not apply"):
        numfid.check("sum", "--in fp32 --out fp32", x=x, c=x.sum(1), ref_profile="trn2")
    # Given at its default value is still given (it once passed silently, as if it applied).
    for kwargs in ({"eps": 1e-5}, {"axis": -1}, {"variance": "any"}, {"softmax": "textbook"}, {"norm_form": "centred"}):
        with pytest.raises(TypeError, match=f"numfid.check\\('matmul'\\): option {next(iter(kwargs))}= does not apply"):
            numfid.check_matmul(a, b, c, claim, **kwargs)
    with pytest.raises(TypeError, match=r"numfid.check\('exp'\): option axis= does not apply to it$"):
        numfid.check("exp", "--in fp32 --compute fp32 --out fp32", x=x, c=np.ones_like(x), axis=-1)
    with pytest.raises(ValueError, match="tol matmul: eps= does not apply to matmul"):
        numfid.tol("matmul", claim, 16, eps=1e-5)
    with pytest.raises(ValueError, match="tol layernorm: target_profile= does not apply to layernorm"):
        numfid.tol("layernorm", "--in fp32 --compute fp32 --out fp32", 16, target_profile="trn2")
    # Operands likewise: rmsnorm has no beta, an elementwise op no gamma.
    with pytest.raises(TypeError, match="unexpected operand 'beta'"):
        numfid.check("rmsnorm", "--in fp32 --compute fp32 --out fp32", x=x, c=x, gamma=np.ones(4, np.float32),
                     beta=np.zeros(4, np.float32))
    with pytest.raises(TypeError, match="unexpected operand 'gamma'"):
        numfid.check("exp", "--in fp32 --compute fp32 --out fp32", x=x, c=np.ones_like(x), gamma=np.ones(4, np.float32))
    # Where an op takes it, the default given explicitly is the default.
    rng = np.random.default_rng(5)
    xs = rng.standard_normal((4, 64)).astype(np.float32)
    x64 = xs.astype(np.float64)
    ln = ((x64 - x64.mean(1, keepdims=True)) / np.sqrt(x64.var(1, keepdims=True) + 1e-5)).astype(np.float32)
    plain = numfid.check("layernorm", "--in fp32 --compute fp32 --out fp32", x=xs, c=ln)
    spelled = numfid.check("layernorm", "--in fp32 --compute fp32 --out fp32", x=xs, c=ln, eps=1e-5, variance="any",
                           norm_form="centred", axis=-1)
    assert plain.report == spelled.report and plain.verdict == "consistent"
    # A bad choice is named by its keyword, as every other option's is (it said "--masked-row 'Zero'").
    sm = np.random.default_rng(6).standard_normal((2, 4)).astype(np.float32)
    with pytest.raises(ValueError, match=r"^masked_row='Zero': unknown choice \(valid: nan, zero\)"):
        numfid.check("softmax", "--in fp32 --out fp32 --compute fp32", x=sm, c=sm, masked_row="Zero")
    # addend_format= without addend=: it names the format of nothing (it was ignored).
    with pytest.raises(ValueError, match="addend_format= names the format of an addend: give the addend with addend="):
        numfid.check_matmul(a, b, c, claim, addend_format="bf16")
    # param_format= without gamma=/beta=, and a method option under an --ulps claim, describe nothing.
    with pytest.raises(ValueError, match="param_format= names the format of gamma=/beta=, and neither is given"):
        numfid.check("layernorm", "--in fp32 --compute fp32 --out fp32", x=x, c=x, param_format="bf16")
    with pytest.raises(ValueError, match="variance= describes the arithmetic of --compute F"):
        numfid.check("layernorm", "--in fp32 --ulps 1 --out fp32", x=x, c=x, variance="welford")
    # ref_profile= without ref=: nothing to judge against (the CLI's --ref-profile without --ref alike).
    with pytest.raises(ValueError, match=r"ref= needs ref_profile= \(the platform that produced the reference\)"):
        numfid.check_matmul(a, b, c, claim, ref=c)
    with pytest.raises(ValueError, match="ref_profile= names the platform of a reference output: give that output with ref="):
        numfid.check_matmul(a, b, c, claim, ref_profile="trn2")
    for worst in (-1, 2**30 + 1, 2**40, 1.5, True):
        with pytest.raises(ValueError, match=r"the number of elements to list is an integer from 0 to 1073741824 \(the CLI's --worst range\)"):
            numfid.check_matmul(a, b, c, claim, worst=worst)
    assert numfid.check_matmul(a, b, c, claim, worst=0).verdict == "consistent"


def test_emulate_refuses_what_does_not_apply_and_names_wrong_kinds():
    """emulate() refuses options of the other ops (x=/axis= on matmul, a/b/c/c_format on sum), as
    check() does, instead of ignoring them; an op or claim that is not a str is a TypeError."""
    a = np.ones((4, 8), np.float32)
    b = np.ones((8, 3), np.float32)
    claim = "--in fp32 --out fp32 --plan sequential"
    with pytest.raises(ValueError, match=r"x= and axis= are emulate\('sum'\)'s"):
        numfid.emulate("matmul", claim, a=a, b=b, x=a)
    with pytest.raises(ValueError, match=r"x= and axis= are emulate\('sum'\)'s"):
        numfid.emulate("matmul", claim, a=a, b=b, axis=0)
    with pytest.raises(ValueError, match=r"give x= \(and axis=\), not a/b/c/c_format"):
        numfid.emulate("sum", claim, x=a, c_format="int8")
    with pytest.raises(TypeError, match=r"the claim is its text form \(a str\), not NoneType"):
        numfid.emulate("matmul", None, a=a, b=b)
    with pytest.raises(TypeError, match="bits must be True or False"):
        numfid.emulate("matmul", claim, a=a, b=b, bits=2)
    with pytest.raises(TypeError, match="op must be a str"):
        numfid.check(None, claim, a=a, b=b, c=np.ones((4, 3), np.float32))
    with pytest.raises(TypeError, match=r"the claim is its text form \(a str\), not int"):
        numfid.check("matmul", 3, a=a, b=b, c=np.ones((4, 3), np.float32))
    assert numfid.emulate("matmul", claim, a=a, b=b).shape == (4, 3)
    assert numfid.emulate("sum", claim, x=a, axis=0).shape == (8,)


def test_messages_name_the_python_arguments():
    """The library's messages name the CLI's options; Python callers read their own keywords and
    arguments (docs/python.md): "--c c is [3]" is "c is [3]", "--axis 2" is "axis=2"."""
    x = np.zeros((2, 4), np.float32)
    with pytest.raises(ValueError, match=r"shape mismatch: c is \[3\] but x is \[2, 4\]"):
        numfid.check("softmax", "--in fp32 --compute fp32 --out fp32", x=x, c=np.zeros(3, np.float32))
    with pytest.raises(ValueError, match=r"axis=2 out of range for shape \[2, 4\]"):
        numfid.check("softmax", "--in fp32 --compute fp32 --out fp32", x=x, c=x, axis=2)
    with pytest.raises(ValueError, match="variance='kahan': unknown method"):
        numfid.check("layernorm", "--in fp32 --compute fp32 --out fp32", x=x, c=x, variance="kahan")
    with pytest.raises(ValueError) as e:  # claim-text options stay as the caller wrote them
        numfid.check("exp", "--in fp32 --acc fp16 --compute fp32 --out fp32", x=x, c=x)
    assert "--acc belongs to a reduction's claim" in str(e.value)
    # A keyword's option written into the claim text by mistake is named as written ("unknown
    # option 'eps='" read as if the keyword eps= were unknown), and said to be check's own.
    for option in ("--param-format fp32", "--eps 1e-3", "--axis 0", "--variance sumsq"):
        with pytest.raises(ValueError) as e:
            numfid.check("rmsnorm", "--in fp32 --out fp32 --compute fp32 " + option, x=x, c=x)
        flag = option.split()[0]
        keyword = flag[2:].replace("-", "_")
        assert f"claim: '{flag}' is an option of `numfid check`" in str(e.value), str(e.value)
        assert f"the Python keyword {keyword};" in str(e.value), str(e.value)


X = np.ones((4, 8), np.float32)
SUM = "--in fp32 --acc fp32 --out fp32 --plan sequential"
ROW = "--in bf16 --out bf16 --compute fp32"


@pytest.mark.parametrize("call, message", [
    (lambda: numfid.check("sum", SUM, x=X, c=X.sum(0), axis=0.0), "numfid.check: axis must be an int or None, not float"),
    (lambda: numfid.check("layernorm", ROW, x=X, c=X, eps="1e-3"), "numfid.check: eps must be a float or None, not str"),
    (lambda: numfid.check("layernorm", ROW, x=X, c=X, variance=2), "numfid.check: variance must be a str or None, not int"),
    (lambda: numfid.convert(X, None), "numfid.convert: to must be a str, not NoneType"),
    (lambda: numfid.convert(X, "fp8_e4m3", saturate="no"), "numfid.convert: saturate must be True or False, not 'no'"),
    (lambda: numfid.convert(X, "bf16", rounding=None), "numfid.convert: rounding must be a str, not NoneType"),
    (lambda: numfid.convert(X, "bf16", bits=1), "numfid.convert: bits must be True or False, not 1"),
    (lambda: numfid.convert(np.zeros(2, np.uint16), "fp32", from_=16), "numfid.convert: from_ must be a str or None, not int"),
    (lambda: numfid.emulate("sum", SUM, x=X, axis=0.0), "numfid.emulate: axis must be an int, not float"),
    (lambda: numfid.emulate("matmul", SUM, a=X, b=X.T, c_format=1), "numfid.emulate: c_format must be a str or None, not int"),
    (lambda: numfid.tol(None, "--in bf16 --acc fp32 --out bf16", 4), "numfid.tol: op must be a str, not NoneType"),
    (lambda: numfid.tol("matmul", None, 4), "numfid.tol: claim must be a str, not NoneType"),
    (lambda: numfid.tol("matmul", "--in bf16 --acc fp32 --out bf16", 4, addend=None), "numfid.tol: addend must be True or False, not None"),
    (lambda: numfid.tol("layernorm", ROW, 64, eps="1e-3"), "numfid.tol: eps must be a float or None, not str"),
    (lambda: numfid.tol("layernorm", ROW, 64, eps="abc"), "numfid.tol: eps must be a float or None, not str"),
    (lambda: numfid.tol("matmul", "--in bf16 --out bf16", 4, target_profile=1), "numfid.tol: target_profile must be a str or None, not int"),
    (lambda: numfid.probe(None, "sum", k=8), "numfid.probe: fn must be a callable fn(a, b) -> array, not NoneType"),
    (lambda: numfid.probe(np.sum, "sum", k=8.0), "numfid.probe: k must be an int, not float"),
    (lambda: numfid.probe(np.sum, "sum", k=8, in_format=None), "numfid.probe: in_format must be a str, not NoneType"),
    (lambda: numfid.probe(np.sum, "sum", k=8, seed="1"), "numfid.probe: seed must be an int, not str"),
    (lambda: numfid.check_matmul(X, X.T, X @ X.T, "--in fp32 --out fp32").predicted(bits=None),
     "numfid.CheckResult.predicted: bits must be True or False, not None"),
])
def test_a_wrong_kind_of_argument_is_a_type_error_naming_it(call, message):
    """Not pybind11's "incompatible function arguments" listing of the private signatures: the
    argument is named (docs/python.md, Errors), and tol and check agree (eps='1e-3' is refused
    by both, not parsed by one)."""
    with pytest.raises(TypeError) as e:
        call()
    assert str(e.value) == message
    assert "incompatible function arguments" not in str(e.value)


def test_a_bool_is_not_an_integer_argument():
    """axis=True once ran as axis 1 (worst=True was refused): a bool is refused for every integer
    argument, as a gate file's `axis: false` is."""
    x = numfid.convert(np.random.default_rng(0).standard_normal((3, 4, 50)), "fp32")
    c = numfid.emulate("sum", SUM, x=x, axis=1)
    for flag in (True, False, np.bool_(True)):
        with pytest.raises(TypeError, match="numfid.check: axis must be an int or None, not bool"):
            numfid.check("sum", SUM, x=x, c=c, axis=flag)
        with pytest.raises(TypeError, match="numfid.check: axis must be an int or None, not bool"):
            numfid.check("softmax", ROW, x=X, c=X, axis=flag)
        with pytest.raises(TypeError, match="numfid.emulate: axis must be an int, not bool"):
            numfid.emulate("sum", SUM, x=x, axis=flag)
        with pytest.raises(TypeError, match="numfid.tol: k must be an int, not bool"):
            numfid.tol("matmul", "--in bf16 --acc fp32 --out bf16", flag)
        with pytest.raises(TypeError, match="numfid.probe: k must be an int, not bool"):
            numfid.probe(np.sum, "sum", k=flag)


def test_numpy_integers_and_floats_are_ints_and_floats():
    """k=np.int64(64) was refused while worst= and axis= took NumPy integers."""
    claim = "--in bf16 --acc fp32 --out bf16"
    assert numfid.tol("matmul", claim, np.int64(64)).report == numfid.tol("matmul", claim, 64).report
    assert numfid.tol("layernorm", ROW, np.int32(64), eps=np.float32(0.0)).report == \
        numfid.tol("layernorm", ROW, 64, eps=0).report
    x = numfid.convert(np.random.default_rng(0).standard_normal((3, 4, 50)), "fp32")
    c = numfid.emulate("sum", SUM, x=x, axis=np.int64(1))
    assert numfid.check("sum", SUM, x=x, c=c, axis=np.int16(1), worst=np.int64(2)).verdict == "consistent"


def test_an_integer_beyond_the_cpp_type_is_a_value_error_naming_it():
    with pytest.raises(ValueError, match=r"^numfid.tol: k=1180591620717411303424 is out of range"):
        numfid.tol("matmul", "--in bf16 --acc fp32 --out bf16", 2**70)
    with pytest.raises(ValueError, match=r"^numfid.check: axis=4294967296 is out of range"):
        numfid.check("sum", SUM, x=X, c=X.sum(0), axis=2**32)
    with pytest.raises(ValueError, match=r"^numfid.emulate: axis=-4294967296 is out of range"):
        numfid.emulate("sum", SUM, x=X, axis=-2**32)
    with pytest.raises(ValueError, match=r"^numfid.probe: seed=-1 is out of range"):
        numfid.probe(np.sum, "sum", k=8, seed=-1)


def test_an_unsigned_array_read_as_values_under_a_wider_float_format_warns_as_the_cli_notes():
    # bf16 patterns in a uint16 array judged as fp32 (docs/io.md: integer values there): the verdict
    # alone is a bare defect; a UserWarning says why, as the CLI's note on stderr.
    a = np.ones((2, 4), np.float32)
    b = np.ones((4, 3), np.float32)
    c = np.full((2, 3), 0x4080, np.uint16)  # bf16 4.0, the exact result
    with pytest.warns(UserWarning, match=r"numfid: note: .*its uint16 elements are read as integer values \(fp32 values\); "
                                         r"bit patterns are read as such only under a format stored in 2 bytes \(fp16, bf16\)"):
        r = numfid.check("matmul", "--in fp32 --out fp32", a=a, b=b, c=c)
    assert r.verdict == "defect"
    with pytest.warns(UserWarning, match="its uint16 elements"):
        numfid.check("exp", "--in fp32 --compute fp32 --out fp32", x=np.zeros(3, np.float32), c=np.full(3, 0x3f80, np.uint16))
    with pytest.warns(UserWarning, match="its uint16 elements"):
        numfid.emulate("matmul", "--in fp32 --out fp32 --plan sequential", a=a, b=b, c=c)
    # Patterns of the declared width: no warning.
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert numfid.check("matmul", "--in fp32 --out bf16", a=a, b=b, c=c).verdict == "consistent"


def test_addend_placement_and_profile_messages_name_the_python_arguments():
    # The library's messages name the CLI's --addend; Python's name its keywords. A claim's
    # options given as a profile said "claim: --profile needs a value", about a --profile nobody wrote.
    a = np.ones((2, 4), np.float32)
    b = np.ones((4, 3), np.float32)
    c = np.full((2, 3), 4, np.float32)
    placed = "--in fp32 --out fp32 --addend-at end"
    with pytest.raises(ValueError, match=r"^numfid.check\('matmul'\): --addend-at end says where an addend enters the sum: "
                                         r"give the addend \(addend=\)$"):
        numfid.check("matmul", placed, a=a, b=b, c=c)
    with pytest.raises(ValueError, match=r"^numfid.tol\('matmul'\): .*give the addend \(addend=True\)$"):
        numfid.tol("matmul", placed, k=4)
    with pytest.raises(ValueError, match=r"^numfid.emulate\('matmul'\): .*give the addend \(c=\)$"):
        numfid.emulate("matmul", placed + " --plan sequential", a=a, b=b)
    with pytest.raises(ValueError, match=r"^ref_profile= '--in bf16' is not a profile: give a profile's name or file"):
        numfid.check("matmul", "--in fp32 --out fp32", a=a, b=b, c=c, ref=c, ref_profile="--in bf16")
    with pytest.raises(ValueError, match=r"^the target's profile '' is not a profile"):
        numfid.tol("matmul", "--in bf16 --out bf16", k=4, target_profile="")


def test_operands_that_are_not_dense_arrays_of_one_shape_are_named():
    # Each failed with NumPy's or torch's own exception, naming neither the argument nor the way
    # out; a masked array's hidden values were judged silently.
    x = np.zeros(4, np.float32)
    c = np.ones(4, np.float32)
    claim = "--in fp32 --compute fp32 --out fp32"
    with pytest.raises(ValueError, match=r"^x: not an array of one shape \(a ragged nested list\?\)"):
        numfid.check("exp", claim, x=[[0.0, 0.0], [0.0]], c=c)
    with pytest.raises(ValueError, match=r"^c: a masked array \(numpy.ma\) with 1 masked element\(s\): numfid judges "
                                         r"every element; give c.data to judge them all, or c.filled\(value\)$"):
        numfid.check("exp", claim, x=x, c=np.ma.masked_array(c, mask=[0, 1, 0, 0]))
    # A mask that hides nothing is no mask.
    assert numfid.check("exp", claim, x=x, c=np.ma.masked_array(c, mask=False)).verdict == "consistent"
    torch = pytest.importorskip("torch")
    with pytest.raises(ValueError, match=r"^x: a torch tensor on the meta device holds no values"):
        numfid.check("exp", claim, x=torch.zeros(4, device="meta"), c=c)
    with pytest.raises(TypeError, match=r"^c: a torch tensor of layout sparse_coo: give a dense tensor \(t.to_dense\(\)\)"):
        numfid.check("exp", claim, x=x, c=torch.ones(4).to_sparse())
