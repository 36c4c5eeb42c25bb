"""numfid.probe on Python callables: NumPy's float32 sum is recovered blind and its profile
validated; a float64 accumulator (outside numfid's model space) is reported, not written."""
import numpy as np
import pytest

import numfid


def test_numpy_sum_is_recovered():
    r = numfid.probe(lambda a, b: np.sum(a, axis=1, dtype=np.float32), "sum", k=48)
    assert r["pinned"], r["message"]
    assert r["validation_mismatches"] == 0 and r["validation_elements"] >= 10000
    assert "value: blocked(8192, numpy)" in r["yaml"]


def test_a_wider_accumulator_is_reported_not_written():
    r = numfid.probe(lambda a, b: np.sum(a.astype(np.float64), axis=1).astype(np.float32), "sum", k=8)
    assert not r["pinned"]
    assert r["yaml"] == ""
    assert "no model" in r["message"]


def test_outputs_that_are_not_output_format_values_are_refused():
    with pytest.raises(ValueError, match="is not a fp32 value"):
        numfid.probe(lambda a, b: np.sum(a.astype(np.float64), axis=1) + 1e-12, "sum", k=8)


def test_row_wise_dot_with_rounded_products():
    r = numfid.probe(lambda a, b: np.add.reduce(a * b, axis=1), "dot", k=16)
    assert r["pinned"], r["message"]
    assert "products rounded" in r["model"] or "pairwise" in r["model"] or "numpy" in r["model"], r["model"]


def test_validation_below_the_rule_is_refused_before_any_call():
    """A profile is written only after >= 10^4 fresh outputs reproduce (docs/probes.md); the
    library refuses fewer, as the CLI's --validation does, before the black box is called."""
    calls = []

    def box(a, b):
        calls.append(1)
        return (a * b).sum(axis=1)

    with pytest.raises(ValueError, match="validation of 10 elements: at least 10000"):
        numfid.probe(box, "dot", k=4, validation=10)
    assert not calls


def test_a_spent_budget_reports_what_was_sent_and_no_candidates():
    """The budget runs out inside the order's FPRev calls: one call made, no model tried
    (candidate_count None, not "0 consistent"), nothing written."""
    calls = []

    def box(a, b):
        calls.append(a.shape[0])
        return np.sum(a, axis=1, dtype=np.float32)

    r = numfid.probe(box, "sum", k=8, budget=1)
    assert not r["pinned"] and r["yaml"] == ""
    assert "budget" in r["message"] and "budget" in r["tree_note"]
    assert r["calls"] == 1 == len(calls)
    assert r["probe_rows"] == calls[0]
    assert r["candidate_count"] is None


def test_a_profile_name_the_profiles_list_cannot_show_is_refused_before_any_call():
    calls = []

    def box(a, b):
        calls.append(1)
        return np.sum(a, axis=1, dtype=np.float32)

    for bad in ("", ".yaml", "a b", "a:b"):
        with pytest.raises(ValueError, match="a profile name is letters, digits"):
            numfid.probe(box, "sum", k=8, name=bad)
    assert not calls


def test_what_the_callable_returned_is_named_with_what_was_needed():
    """A wrong answer from fn was a RuntimeError ("answered 1 values" for None): now a TypeError
    for something that is not an array of numbers, a ValueError for the wrong number of values,
    each saying what fn returned and what the call needed (docs/python.md)."""
    with pytest.raises(TypeError, match=r"^numfid.probe: fn returned None; it must return an array of 15 values "
                                        r"\(one per row of a\)$"):
        numfid.probe(lambda a, b: None, "sum", k=16)
    with pytest.raises(TypeError, match=r"^numfid.probe: fn returned a str, not an array of numbers"):
        numfid.probe(lambda a, b: "sums", "sum", k=16)
    with pytest.raises(ValueError, match=r"^numfid.probe: fn returned 3 values \(shape \(3,\)\) for a call that needs "
                                         r"15 values \(one per row of a\)$"):
        numfid.probe(lambda a, b: np.zeros(3, np.float32), "sum", k=16)
    with pytest.raises(ValueError, match=r"fn returned \d+ values \(shape \(\d+, 1\)\) for a call that needs \d+ values "
                                         r"\(\d+ rows × \d+ columns\)$"):
        numfid.probe(lambda a, b: (a @ b)[:, :1], "matmul", k=16)
    # The values' count is what matters, not the shape: a column of row sums is R values.
    r = numfid.probe(lambda a, b: np.sum(a, axis=1, dtype=np.float32)[:, None], "sum", k=8)
    assert r["pinned"], r["message"]
