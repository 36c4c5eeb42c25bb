"""Result objects: what numfid.check and numfid.tol return.

Every attribute is read from the library's own JSON document (CheckResult::json(), the one
`numfid check --json` writes), so the Python view and the CLI's cannot drift apart.
"""

import json

from ._args import bool_arg


class CheckResult:
    """The verdict of one check (tolerances/check.h CheckResult).

    Attributes:
        verdict: "consistent", "suspicious" or "defect".
        reason: one line: why this verdict.
        counts: elements per class: bit_exact, within_probabilistic,
            within_deterministic_only, outside_deterministic.
        elements: number of output elements judged.
        worst: the worst elements (|error| / deterministic bound), each a dict with index, row,
            col, position (the element's index over the output's axes: [b, h, i, j] in a stack),
            bits, value, exact, error_ulps, deterministic_bound, probabilistic_bound,
            fraction_of_bound, class.
        matrices: for an output of more than two axes (a stack of matrices), a dict with count
            and outside_deterministic (each matrix holding elements outside the deterministic
            bound: position over the leading axes and elements, the most first); else None.
        signatures: evidence about the whole error field, dicts with name and evidence.
        bounds: deterministic and probabilistic bound coefficients, with the roundings,
            unit roundoff and derivation lines (dict).
        derivation: the bound's derivation, line by line.
        claim, order, model: as the report states them (model: None where no model ran).
        report: the text `numfid check` prints.
        exit_code: the CLI's exit code for this verdict (1 for a defect, else 0).
    """

    def __init__(self, native, shape=None):
        self._native = native
        self._shape = shape
        self._json = native.json()
        d = json.loads(self._json)
        self.op = d["op"]
        self.verdict = d["verdict"]
        self.reason = d["reason"]
        self.claim = d["claim"]
        self.order = d["order"]
        self.elements = d["elements"]
        self.counts = dict(d["counts"])
        self.worst = list(d.get("worst", []))
        self.matrices = d.get("matrices")
        self.cross_platform = bool(d.get("cross_platform", False))  # then each worst["exact"] is R's value
        self.signatures = list(d.get("signatures", []))
        self.model = d.get("model")
        self.max_error_ulps = d["max_error_ulps"]
        self.derivation = list(d["derivation"])
        self.bounds = dict(d["bounds"])
        self.bounds.update(roundings=d["roundings"], unit_roundoff=d["unit_roundoff"],
                           output_rounding_ulps=d["output_rounding_ulps"], derivation=self.derivation)
        self.report = native.text()
        self.exit_code = native.exit_code()

    @property
    def consistent(self):
        """True unless the verdict is a defect (a suspicious output passes, with a warning)."""
        return self.verdict != "defect"

    def to_json(self):
        """The verdict as the JSON document `numfid check --json` writes."""
        return self._json

    def predicted(self, bits=False):
        """The output the claim's model predicts bit for bit (float32 values, or bit patterns
        with bits=True), where the check ran a model; else None."""
        return self._native.predicted(list(self._shape or []), bool_arg("CheckResult.predicted", "bits", bits))

    def __bool__(self):
        return self.consistent

    def __str__(self):
        return self.report

    def __repr__(self):
        return f"<numfid.CheckResult {self.op}: {self.verdict} — {self.reason}>"


class Tolerance:
    """The bounds a claim implies (tolerances/check.h ToleranceResult): `report` is what
    `numfid tol` prints, `to_json()` what `numfid tol --json` prints; the JSON's fields are
    attributes too (rtol/atol equivalents of torch.testing.assert_close, bounds, derivation)."""

    def __init__(self, native):
        self._json = native.json()
        self.report = native.text()
        self.data = json.loads(self._json)
        # An exact claim (integer GEMM) has no rtol/atol equivalent: None, not a missing attribute.
        self.equivalent = self.data.get("equivalent")
        for key, value in self.data.items():
            if key.isidentifier() and not hasattr(self, key):
                setattr(self, key, value)

    def to_json(self):
        return self._json

    def __str__(self):
        return self.report

    def __repr__(self):
        return f"<numfid.Tolerance {self.data.get('op', '')} k={self.data.get('k', '')}>"
