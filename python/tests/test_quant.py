"""Integer and scaled claims from Python: the scale files a claim names are read by the same
function as the CLI's (tolerances/scale_files.h), so reports are identical; a missing file is a
ValueError naming the option and the file; integer --ref needs no profile."""

import numpy as np
import pytest

import numfid
from conftest import SOURCE, cli_json

INT_DATA = SOURCE / "tests" / "cli" / "data"
INT_CLAIM = ("--in int8 --in-b uint8 --acc int32 --zero-point-a -3 --zero-point-b 131 --out int8 --out-zero-point 5 "
             "--saturate --out-scale ")


def _int_operands():
    return (np.load(INT_DATA / "int_a.npy"), np.load(INT_DATA / "int_b.npy"), np.load(INT_DATA / "int_pc.npy"))


def test_out_scale_file_read_as_the_cli_reads_it(cli, tmp_path):
    a, b, c = _int_operands()
    claim = INT_CLAIM + str(INT_DATA / "int_scales.npy")
    r = numfid.check_matmul(a, b, c, claim)
    rc, js, stdout = cli_json(cli, tmp_path, "check", "matmul", "--a", INT_DATA / "int_a.npy", "--b",
                              INT_DATA / "int_b.npy", "--c", INT_DATA / "int_pc.npy", *claim.split())
    assert r.verdict == "consistent", r.report
    assert r.to_json() == js and r.report == stdout and r.exit_code == rc == 0


def test_missing_scale_file_names_option_and_file(tmp_path):
    a, b, c = _int_operands()
    with pytest.raises(ValueError, match=r"--out-scale: .*no_such\.npy"):
        numfid.check_matmul(a, b, c, INT_CLAIM + str(tmp_path / "no_such.npy"))


def test_integer_ref_is_judged_against_the_exact_result():
    a, b, _ = _int_operands()
    c = np.load(INT_DATA / "int_rne.npy")
    claim = INT_CLAIM + "0.001953125"
    ok = numfid.check("matmul", claim, a=a, b=b, c=c, ref=c)
    assert ok.verdict == "consistent", ok.report
    bad = numfid.check("matmul", claim, a=a, b=b, c=c, ref=np.load(INT_DATA / "int_zp_flipped.npy"))
    assert bad.verdict == "defect" and "R (the reference)" in bad.reason, bad.report
