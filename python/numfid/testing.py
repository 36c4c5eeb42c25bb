"""pytest-friendly assertions in the vocabulary of torch.testing.assert_close.

    from numfid.testing import assert_consistent
    assert_consistent("matmul", "--in bf16 --acc fp32 --out bf16", a=A, b=B, c=C)

A failing assertion raises AssertionError whose message is the check's verdict line and
reason, the worst elements, the signatures and the bound's derivation (the report `numfid
check` prints): never a dump of tensor values.
"""

from . import check as _check
from ._args import bool_arg as _bool_arg


def assert_consistent(op, claim, *, allow_suspicious=True, msg=None, **operands):
    """Asserts that the output is consistent with `claim` (numfid.check's arguments).

    A defect fails. A suspicious verdict (more elements outside the probabilistic bound than
    chance explains, under round-to-nearest: evidence, not proof) fails only with
    allow_suspicious=False. Returns the CheckResult. msg: prepended to the failure message.
    """
    allow_suspicious = _bool_arg("testing.assert_consistent", "allow_suspicious", allow_suspicious)
    r = _check(op, claim, **operands)
    if r.verdict == "defect" or (r.verdict == "suspicious" and not allow_suspicious):
        head = f"{msg}\n" if msg else ""
        raise AssertionError(f"{head}{r.report.rstrip()}")
    return r


def assert_matmul_consistent(a, b, c, claim, **options):
    """assert_consistent("matmul", claim, a=a, b=b, c=c, **options)."""
    return assert_consistent("matmul", claim, a=a, b=b, c=c, **options)
