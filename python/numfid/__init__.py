"""numfid for Python: verdicts, tolerances, formats and emulation of ML kernels' numerics.

The same library pipeline as the `numfid` command line (docs/python.md): a claim is the CLI's
claim text ("--in bf16 --acc fp32 --out bf16", "--in bf16 --out bf16 --profile trn2"), a
result's ``report`` is the text `numfid check` prints and ``to_json()`` the JSON of
`numfid check --json`. Bad input raises ValueError (or TypeError for a wrong kind of argument)
with the CLI's message.

Arrays: NumPy arrays (float16/32/64 containers holding values of the declared format; uint8 /
uint16 / uint32 arrays of bit patterns of it), ml_dtypes arrays (bfloat16, float8_*, ...) and
PyTorch tensors (float32, float16, bfloat16, float8 dtypes; other devices are copied to the CPU).
"""

import functools as _functools
import numbers as _numbers
import re as _re
import warnings as _warnings
import os as _os

import numpy as _np

from . import _numfid
from ._args import INT32 as _INT32, UINT64 as _UINT64
from ._args import bool_arg as _bool_arg, float_arg as _float_arg, int_arg as _int_arg, str_arg as _str_arg
from ._arrays import as_operand as _as_operand, as_values as _as_values
from ._arrays import operand as _operand
from ._result import CheckResult, Tolerance
from ._version import version as __version__  # numfid's project version (CMakeLists.txt)

# The library's messages name the CLI's options (one pipeline, one wording); here the keywords and
# arguments a Python caller gave. Operands: "--c c is [3]" -> "c is [3]" (the binding names each
# tensor by its argument). Keyword options: "--axis 2" -> "axis=2", "--eps" -> "eps=". Claim-text
# options (--acc, --compute, ...) are what the caller wrote in the claim and stay as they are, and
# so does an option quoted as written ("claim: unknown option '--eps'": the caller put a keyword's
# option into the claim text, which says so in its own spelling).
_OPERAND_FLAG = _re.compile(r"(?<!')--(a|b|c|x|gamma|beta|ref|addend) \1(?![\w-])")
_KEYWORD_FLAG = _re.compile(
    r"(?<!')--(ref-profile|target-profile|addend-format|param-format|norm-form|masked-row|variance|softmax|axis|eps|gamma|beta)(?![\w-])"
    r"(?: ('[^']*'|\"[^\"]*\"|[-+]?[0-9][^\s:,;)]*|nan|inf|zero|textbook|online|two-pass|welford|sumsq|chan|any|centred"
    r"|shifted|rowwise-moments\([0-9]+\)))?")


def _in_python_terms(message):
    message = _OPERAND_FLAG.sub(r"\1", message)
    return _KEYWORD_FLAG.sub(lambda m: m.group(1).replace("-", "_") + "=" + (m.group(2) or ""), message)


def _python_errors(fn):
    """ValueErrors from the library re-worded for a Python caller (_in_python_terms)."""
    @_functools.wraps(fn)
    def wrapped(*args, **kwargs):
        try:
            return fn(*args, **kwargs)
        except ValueError as e:
            worded = _in_python_terms(str(e))
            if worded == str(e):
                raise
            raise ValueError(worded) from None
    return wrapped

__all__ = ["check", "check_matmul", "tol", "emulate", "convert", "profiles", "formats", "probe", "CheckResult",
           "Tolerance", "testing"]

# An installed package carries its profiles (python/CMakeLists.txt); the build tree uses the
# source tree's. NUMFID_PROFILES, when set, wins over both (numerics/profile.cpp).
_here = _os.path.join(_os.path.dirname(__file__), "profiles")
if _os.path.isdir(_here):
    _numfid.set_package_profiles(_here)

# The optional operands of numfid.check; which op takes which is the library's table (check_takes).
_OPTIONAL_OPERANDS = ("addend", "ref", "gamma", "beta")


@_python_errors
def check(op, claim, *, worst=8, addend_format=None, ref_profile=None, axis=None, eps=None, variance=None,
          softmax=None, param_format=None, norm_form=None, masked_row=None, **operands):
    """Is an output consistent with the arithmetic `claim` states? Returns a CheckResult.

    op: "matmul" (a: M×K, b: K×N, c: M×N; a [..., M, K] with one b or a b [..., K, N] of the same
        leading axes, c [..., M, N]), "dot" (row-wise: a, b: R×K, c: R elements), "sum"
        (x, c, axis), or a row op: softmax, log_softmax, layernorm, rmsnorm (gamma, beta, eps;
        rows along `axis`, default -1, as torch's dim), exp, log, tanh, sigmoid, silu, gelu_erf,
        gelu_tanh, reciprocal, rsqrt (x, c).
    claim: the claim text of `numfid check`, e.g. "--in bf16 --acc fp32 --out bf16".
    matmul/dot also take addend= (the addend the kernel added; addend_format=, default the
    accumulator's) and ref= with ref_profile= (judge against another platform's output).
    Row ops under --compute: variance= (layernorm: "any", "two-pass", "welford", "sumsq", "chan",
    "rowwise-moments(V)": PyTorch CPU's tree with V lanes), norm_form= (layernorm: "centred" or
    "shifted", x·r + b as PyTorch CPU), softmax= (softmax/log_softmax: "textbook" or "online"),
    param_format= (gamma/beta's format, default the claim's --in), as the CLI's --variance,
    --norm-form, --softmax, --param-format. softmax under either claim: masked_row= (what a fully
    masked row, every entry -inf, must give: "nan", torch.softmax's 0/0, or "zero", a guarded
    kernel's as PyTorch's _safe_softmax; the CLI's --masked-row). An option left None takes the
    library's default (eps 1e-5, variance "any", norm_form "centred", softmax "textbook",
    masked_row "nan"); one given to an op that does not take it, even at its default value, is a
    TypeError.
    """
    if not isinstance(op, str):
        raise TypeError(f"numfid.check: op must be a str (one of {', '.join(_numfid.check_op_names())}), not "
                        f"{type(op).__name__}")
    if op not in _numfid.check_op_names():
        raise ValueError(f"numfid.check: unknown op '{op}' (known: {', '.join(_numfid.check_op_names())})")
    allowed = ("a", "b", "c") if op in ("matmul", "dot") else ("x", "c")
    allowed += tuple(name for name in _OPTIONAL_OPERANDS if _numfid.check_takes(op, name))
    for name in operands:
        if name not in allowed:
            raise TypeError(f"numfid.check('{op}'): unexpected operand '{name}' (it takes {', '.join(allowed)})")
    if not isinstance(claim, str):
        raise TypeError(f"numfid.check: the claim is its text form (a str), not {type(claim).__name__}")
    # Options an op does not take are refused (as the CLI, which has no such option for it, and
    # gate files do), not ignored: axis=0 on a softmax once was. One table for all three: the
    # library's. An option given at its default value is still given (None: not given).
    options = {"addend_format": addend_format, "ref_profile": ref_profile, "axis": axis, "eps": eps,
               "variance": variance, "softmax": softmax, "param_format": param_format, "norm_form": norm_form,
               "masked_row": masked_row}
    for name, value in options.items():
        if value is not None and not _numfid.check_takes(op, name):
            takes = _numfid.check_options_list(op)
            raise TypeError(f"numfid.check('{op}'): option {name}= does not apply to it"
                            + (f" (it takes {takes})" if takes else ""))
    for name in ("addend_format", "ref_profile", "variance", "softmax", "param_format", "norm_form", "masked_row"):
        options[name] = _str_arg("check", name, options[name], optional=True)
    options["axis"] = _int_arg("check", "axis", axis, _INT32, optional=True)
    options["eps"] = _float_arg("check", "eps", eps, optional=True)
    if isinstance(worst, (bool, _np.bool_)) or not isinstance(worst, _numbers.Integral) or not 0 <= worst <= _numfid.max_worst:
        raise ValueError(f"worst={worst!r}: the number of elements to list is an integer from 0 to {_numfid.max_worst} (the CLI's --worst range)")
    worst = int(worst)
    args = {name: _operand(value, name) for name, value in operands.items()}
    native = _numfid.check(op, claim, worst=worst, **options, **args)
    # C's shape as read (a list or tuple has no .shape: the array made of it has); the model's
    # output .predicted() returns takes it.
    shape = tuple(args["c"][0].shape) if args.get("c") is not None else None
    return CheckResult(native, shape)


def check_matmul(a, b, c, claim, **options):
    """check("matmul", claim, a=a, b=b, c=c, **options): is C consistent with A·B?"""
    return check("matmul", claim, a=a, b=b, c=c, **options)


@_python_errors
def tol(op, claim, k, *, addend=False, ref_profile=None, target_profile=None, eps=None, variance=None,
        softmax=None, norm_form=None):
    """The bounds `claim` implies for `op` ("matmul", "dot" or "sum") over k terms, with their
    derivation and the equivalent rtol/atol (what `numfid tol` prints). For a row or elementwise
    op ("softmax", "layernorm", "gelu_erf", ...: a claim with --compute) each element's bound
    depends on its row's values: the derivation for rows of k elements (`per_element` is True,
    no rtol/atol). Returns a Tolerance."""
    op = _str_arg("tol", "op", op)
    claim = _str_arg("tol", "claim", claim)
    k = _int_arg("tol", "k", k)
    addend = _bool_arg("tol", "addend", addend)
    ref_profile, target_profile, variance, softmax, norm_form = (
        _str_arg("tol", name, value, optional=True)
        for name, value in (("ref_profile", ref_profile), ("target_profile", target_profile), ("variance", variance),
                            ("softmax", softmax), ("norm_form", norm_form)))
    eps = _float_arg("tol", "eps", eps, optional=True)
    try:
        native = _numfid.tol(op, claim, k, addend, ref_profile, target_profile, eps, variance, softmax, norm_form)
    except ValueError as e:
        # The library names the CLI's --k ("--k: the reduction length K must be ..."); here k=.
        if not str(e).startswith("--k:"):
            raise
        raise ValueError(f"k={k}:{str(e)[len('--k:'):]}") from None
    return Tolerance(native)


def _profile_claim(claim_or_profile, fmt_a):
    """A bare profile name -> "--in F --out F --profile NAME" with F the format of A's dtype."""
    text = claim_or_profile.strip()
    if text.startswith("-") or not text:
        return claim_or_profile
    if fmt_a is None:
        raise ValueError(f"numfid.emulate: profile '{text}' alone needs A's format from its dtype (torch or ml_dtypes "
                         f"bfloat16/float8); for a float32 container give the claim, e.g. "
                         f"'--in bf16 --out bf16 --profile {text}'")
    return f"--in {fmt_a} --out {fmt_a} --profile {text}"


@_python_errors
def emulate(op, claim_or_profile, *, a=None, b=None, c=None, x=None, axis=-1, c_format=None, bits=False):
    """The bit-exact output the claim's model (a --plan or a --profile) predicts: D = C + A·B
    ("matmul"), the row-wise D[r] = C[r] + Σ_k A[r,k]·B[r,k] ("dot"), or X summed along `axis`
    ("sum": x=..., a plan or plan profile), as `numfid emulate`.

    claim_or_profile: a claim text with --plan P or --profile NAME, or a bare profile name
    (then --in and --out are the format of A's dtype: torch/ml_dtypes bfloat16, float8, ...).
    Returns a NumPy array: float32 values (exact), or bit patterns with bits=True.
    """
    if not isinstance(op, str):
        raise TypeError(f"numfid.emulate: op must be a str ('matmul', 'dot' or 'sum'), not {type(op).__name__}")
    if not isinstance(claim_or_profile, str):
        raise TypeError(f"numfid.emulate: the claim is its text form (a str), not {type(claim_or_profile).__name__}")
    bits = _bool_arg("emulate", "bits", bits)
    axis = _int_arg("emulate", "axis", axis, _INT32)
    c_format = _str_arg("emulate", "c_format", c_format, optional=True)
    if op not in ("matmul", "dot", "sum"):
        raise ValueError(f"numfid.emulate: unknown op '{op}' (matmul, dot or sum)")
    if op == "sum":
        # Options of the other ops are refused, never ignored (as check() refuses them).
        if a is not None or b is not None or c is not None or c_format is not None:
            raise ValueError("numfid.emulate('sum'): give x= (and axis=), not a/b/c/c_format")
        if x is None:
            raise ValueError("numfid.emulate('sum'): x is required")
        op_x, fmt_x = _as_operand(x, "x")
        _, values, note = _numfid.emulate_sum(_profile_claim(claim_or_profile, fmt_x), op_x, axis, bits)
        if note:  # the numpy plan along a strided axis (numpy sums it in order there)
            _warnings.warn(f"numfid.emulate('sum'): {note}", stacklevel=3)  # past _python_errors' wrapper
        return values
    if x is not None or axis != -1:
        raise ValueError(f"numfid.emulate('{op}'): x= and axis= are emulate('sum')'s; give a=, b= (and c=)")
    if a is None or b is None:
        raise ValueError(f"numfid.emulate('{op}'): a and b are required")
    op_a, fmt_a = _as_operand(a, "a")
    claim = _profile_claim(claim_or_profile, fmt_a)
    _, values = _numfid.emulate(op, claim, op_a, _operand(b, "b"), _operand(c, "c"), c_format or None, bits)
    return values


def convert(array, to, rounding="rne", saturate=False, seed=None, *, from_=None, bits=False, sr_bits=None):
    """Converts every element to format `to`, correctly rounded in one step (formats/convert.h).

    array: float16/32/64 values (float64 is rounded once, never through float32), torch or
        ml_dtypes arrays, or uint8/uint16/uint32 bit patterns of the format named by from_.
    rounding: rne, rtz, rup, rdn, rna or stochastic (seed=, default 0; the element index is the
        random stream, as `numfid convert` uses the line index; sr_bits=R: R random bits, biased toward
        zero by less than 2^-R ulp, as hardware draws them; default exact). saturate: overflow to ±max.
    Returns float32 values of `to` (float64 for int32), or its bit patterns (uint8 / uint16 /
    uint32; int8 and int32 as int8 / int32 arrays, whose values are the patterns) with bits=True.
    """
    to = _str_arg("convert", "to", to)
    rounding = _str_arg("convert", "rounding", rounding)
    saturate = _bool_arg("convert", "saturate", saturate)
    from_ = _str_arg("convert", "from_", from_, optional=True)
    bits = _bool_arg("convert", "bits", bits)
    op, fmt = _as_operand(array, "array")
    if seed is not None and rounding not in ("stochastic", "sr"):
        raise ValueError(f"seed={seed}: a seed only matters for rounding='stochastic'")
    if seed is not None and (not isinstance(seed, _numbers.Integral) or isinstance(seed, bool)
                             or not 0 <= int(seed) < 2**64):
        raise ValueError(f"seed={seed!r}: a seed is an integer in [0, 2^64 - 1]")
    if sr_bits is not None and rounding not in ("stochastic", "sr"):
        raise ValueError(f"sr_bits={sr_bits}: random bits only matter for rounding='stochastic'")
    if sr_bits is not None and (not isinstance(sr_bits, _numbers.Integral) or isinstance(sr_bits, bool)
                                or not 1 <= int(sr_bits) <= 64):
        raise ValueError(f"sr_bits={sr_bits!r}: the random bits of a stochastic rounding are an integer from 1 to 64")
    container = op[1]
    if from_ is None and fmt is not None:
        from_ = fmt
    if from_ is None and container not in ("F16", "F32", "F64", "BF16", "F8_E4M3", "F8_E5M2"):
        raise TypeError(f"numfid.convert: a {op[0].dtype} array holds bit patterns or integers: name their format "
                        f"with from_= (e.g. from_='bf16')")
    _, out = _numfid.convert(op, from_ or "", to, rounding, saturate, int(seed or 0), int(sr_bits or 0), bits)
    return out


def profiles():
    """The platform profiles: dicts with name, version, model, summary, path and fields (each
    with section, key, value, provenance kind and source), as `numfid profiles show` lists them."""
    return _numfid.profiles()


def formats():
    """The names of numfid's formats, in the order `numfid formats` lists them."""
    return list(_numfid.format_names())


def probe(fn, op, *, k, in_format="fp32", out_format="fp32", seed=1, budget=0, validation=10000, name="probed"):
    """Reveal the summation order and arithmetic of the black box `fn` (docs/probes.md), as
    `numfid probe run` does for a command.

    fn(a, b) -> array: "dot": a, b float32 (R, K), returns R values of the row-wise dot;
    "sum": a (R, K), b None, returns R row sums; "matmul": a (M, K), b (K, N), returns M×N.
    Inputs hold values of `in_format`; every output must be a value of `out_format`.
    Returns a dict: pinned, yaml (the profile text, empty unless validated with 0 mismatches
    on `validation` fresh outputs), model, tree, candidates, calls, validation_mismatches,
    message.
    """
    if not callable(fn):
        raise TypeError(f"numfid.probe: fn must be a callable fn(a, b) -> array, not {type(fn).__name__}")
    op, in_format, out_format, name = (_str_arg("probe", arg, value) for arg, value in
                                       (("op", op), ("in_format", in_format), ("out_format", out_format), ("name", name)))
    k, budget, validation = (_int_arg("probe", arg, value) for arg, value in
                             (("k", k), ("budget", budget), ("validation", validation)))
    seed = _int_arg("probe", "seed", seed, _UINT64)
    # A torch harness returns tensors (bf16, tracking gradients, on a device): read as numbers here.
    return _numfid.probe(lambda a, b: _as_values(fn(a, b), "fn(a, b)"), op, k, in_format, out_format, seed, budget,
                         validation, name)


from . import testing  # noqa: E402  (numfid.testing uses the functions above)
