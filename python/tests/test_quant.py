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


def test_integer_patterns_read_back_as_the_values_they_are():
    """bits=True gives a signed integer format's patterns in its own signed type (int8, int32):
    an unsigned container holds values of an integer format (docs/io.md), so uint8 patterns of a
    negative int8 would read back as 128..255 (out of range)."""
    rng = np.random.default_rng(0)
    a = rng.integers(-128, 128, (4, 8)).astype(np.int8)
    b = rng.integers(-128, 128, (8, 3)).astype(np.int8)
    claim = "--in int8 --acc int32 --out int32"
    d = numfid.emulate("matmul", claim, a=a, b=b, bits=True)
    assert d.dtype == np.int32 and (d < 0).any()
    assert np.array_equal(d, a.astype(np.int64) @ b.astype(np.int64))  # exact int32 sums
    assert numfid.check_matmul(a, b, d, claim).verdict == "consistent"
    p = numfid.convert(np.array([-3.0, 127.0, -128.0]), "int8", bits=True)
    assert p.dtype == np.int8 and list(p.view(np.uint8)) == [0xFD, 0x7F, 0x80]
    assert list(numfid.convert(p, "fp32", from_="int8")) == [-3.0, 127.0, -128.0]
    assert numfid.convert(np.array([200.0]), "uint8", bits=True).dtype == np.uint8
