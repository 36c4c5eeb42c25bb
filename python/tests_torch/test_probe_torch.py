"""numfid.probe on a real black box: PyTorch's CPU bf16 matmul (docs/probes.md, issue 13).

Registered as the ctest `python_probe_torch` (label python) only when `import torch` works for
the interpreter at configure time (python/CMakeLists.txt). The probe must pin one model, and
that model's profile must reproduce torch bit for bit both on the probe's own validation set and
on fresh inputs made here with torch's generator, in shapes the probe never used, loaded back
from the YAML the probe wrote (the file, not the in-memory model)."""
import numpy as np
import pytest
import torch

import numfid

K = 32


def torch_bf16_matmul(a, b):
    """The black box: float32 arrays of bf16 values -> torch.matmul of bf16 tensors -> bf16."""
    c = torch.matmul(torch.from_numpy(a).bfloat16(), torch.from_numpy(b).bfloat16())
    return c.float().numpy()


def expected_tree(k):
    """oneDNN's bf16 GEMM on AVX-512 BF16 (vdpbf16ps): per pair of terms the odd product is added
    before the even one, pairs in order: (((0 1) 3) 2) 5) 4 ... (see docs/probes.md)."""
    t = "(0 1)"
    for i in range(2, k, 2):
        t = f"(({t} {i + 1}) {i})"
    return t


@pytest.fixture(scope="module")
def probed():
    torch.manual_seed(0)
    return numfid.probe(torch_bf16_matmul, "matmul", k=K, in_format="bf16", out_format="bf16", seed=1,
                        name="torch-bf16-matmul")


def field(yaml, section_key):
    """The value of `section_key` ("accumulator.ftz") in the profile YAML text."""
    section, key = section_key.split(".")
    lines = yaml.splitlines()
    i = lines.index(f"{section}:")
    for j in range(i + 1, len(lines)):
        if lines[j].strip() == f"{key}:":
            return lines[j + 1].split("value:", 1)[1].strip()
        if lines[j] and not lines[j].startswith(" "):
            break
    raise AssertionError(f"no {section_key} in the profile:\n{yaml}")


def _has_avx512_bf16():
    try:
        with open("/proc/cpuinfo") as f:
            return "avx512_bf16" in f.read()
    except OSError:
        return False


# torch 1.13 gives a bf16 GEMM larger than 16^3 to oneDNN when the CPU has AVX-512; with AVX-512
# BF16 that is the vdpbf16ps kernel this file pins down. Elsewhere another kernel answers (oneDNN
# converting to fp32, or ATen's own gemm): only the probe's contract is checked there.
vdpbf16ps = pytest.mark.skipif(not (_has_avx512_bf16() and torch.backends.mkldnn.is_available()),
                               reason="no AVX-512 BF16 (or no oneDNN): torch runs another kernel than vdpbf16ps")


def test_probe_contract_on_any_cpu(probed):
    """Pinned: validated with 0 mismatches and written; not pinned: nothing written, the reason said."""
    r = probed
    if r["pinned"]:
        assert r["validation_mismatches"] == 0 and r["validation_elements"] >= 10000 and r["yaml"], r["message"]
    else:
        assert r["yaml"] == "" and r["message"], r


@vdpbf16ps
def test_torch_bf16_matmul_is_pinned_and_validated(probed):
    r = probed
    assert r["pinned"], r["message"]
    assert r["validation_mismatches"] == 0, r["message"]
    assert r["validation_elements"] >= 10000
    assert r["yaml"], r["message"]


@vdpbf16ps
def test_torch_bf16_matmul_profile_fields(probed):
    y = probed["yaml"]
    assert probed["tree"] == expected_tree(K)
    # The plan text drops the root's parentheses; its first pair is (1 0): the odd product enters
    # the zeroed register alone, which the subnormal-product rows tell from (0 1) under FTZ.
    assert field(y, "plan.order") == f"tree({expected_tree(K)[1:-1]})".replace("(0 1)", "(1 0)", 1)
    assert field(y, "accumulator.format") == "fp32"
    assert field(y, "accumulator.rounding") == "rne"
    assert field(y, "accumulator.ftz") == "true"
    assert field(y, "accumulator.daz") == "true"  # vdpbf16ps reads subnormal bf16 inputs as zero
    assert field(y, "accumulator.zero_start") == "true"  # each row's sum starts from a zeroed register
    assert field(y, "accumulator.products") == "exact"  # fused: a subnormal product is kept unless it enters alone
    assert field(y, "output.rounding") == "rne"


def fresh_inputs(kind, m, n, g):
    """bf16 operands of one data kind, from torch's own generator (not numfid's)."""
    a = torch.randn(m, K, generator=g)
    b = torch.randn(K, n, generator=g)
    if kind == "wide":  # exponents over 2^-20 .. 2^20: absorption decides many sums
        a = a * torch.exp2(torch.randint(-20, 21, (m, K), generator=g).float())
        b = b * torch.exp2(torch.randint(-20, 21, (K, n), generator=g).float())
    elif kind == "cancel":  # each product has its negation elsewhere in the row, perturbed
        a[:, K // 2:] = -a[:, : K // 2] * (1 + 2.0 ** -6 * torch.randn(m, K // 2, generator=g))
        b[K // 2:, :] = b[: K // 2, :]
    elif kind == "tiny":  # subnormal inputs and products near fp32's subnormal range: DAZ and FTZ matter
        a = a * 2.0 ** -64
        b = b * 2.0 ** -64
    return a.bfloat16(), b.bfloat16()


def mismatches(probed, tmp_path, monkeypatch, kinds):
    """Fresh inputs of `kinds` ({kind: (M, N)}), torch's output against the written profile's:
    the number of differing outputs by kind, and the number of outputs."""
    assert probed["yaml"], probed["message"]
    (tmp_path / "torch-bf16-matmul.yaml").write_text(probed["yaml"])
    monkeypatch.setenv("NUMFID_PROFILES", str(tmp_path))
    g = torch.Generator().manual_seed(2026)
    total, bad_by_kind = 0, {}
    for kind, (m, n) in kinds.items():
        a, b = fresh_inputs(kind, m, n, g)
        got = torch.matmul(a, b).float().numpy()
        want = numfid.emulate("matmul", "--in bf16 --out bf16 --profile torch-bf16-matmul", a=a, b=b)
        bad_by_kind[kind] = int(np.count_nonzero(got.view(np.uint32) != np.asarray(want, dtype=np.float32).view(np.uint32)))
        total += got.size
    return bad_by_kind, total


@vdpbf16ps
def test_profile_reproduces_torch_on_fresh_inputs(probed, tmp_path, monkeypatch):
    bad, total = mismatches(probed, tmp_path, monkeypatch, {"normal": (100, 40), "wide": (96, 44), "cancel": (120, 36)})
    assert total >= 10000
    assert sum(bad.values()) == 0, f"outputs that differ from torch, by data kind: {bad} (of {total})"


@vdpbf16ps
def test_subnormal_products(probed, tmp_path, monkeypatch):
    bad, total = mismatches(probed, tmp_path, monkeypatch, {"tiny": (80, 50)})
    assert bad["tiny"] == 0, f"{bad['tiny']} of {total} outputs with subnormal products differ from torch"


def test_probe_reads_what_a_torch_harness_returns():
    """A black box that returns a bf16 tensor tracking gradients (an nn.Module's output) is probed
    as if it returned the same values as a float32 array: the library reads torch tensors of any
    float dtype (it raised "fn returned a Tensor, not an array of numbers")."""
    def module_like(a, b):
        w = torch.from_numpy(b).requires_grad_()
        return (torch.from_numpy(a) * w).sum(-1).bfloat16()

    def plain(a, b):
        return module_like(a, b).detach().float().numpy()

    kw = dict(k=16, in_format="bf16", out_format="bf16", seed=3)
    got, want = numfid.probe(module_like, "dot", **kw), numfid.probe(plain, "dot", **kw)
    import re
    untimed = lambda r: {**r, "message": re.sub(r", [0-9.]+ s;", ";", r["message"])}  # the message says how long
    assert untimed(got) == untimed(want)
    assert got["calls"] > 0, got
