"""numfid.convert against independent paths: every pattern of every format of at most 16 bits
to fp32 and back, compared with the CLI's `numfid convert` (hex text through stdin/stdout, the
scalar converter, not the module) and, for fp16 and bf16, with NumPy's own float16 and with
the bf16 bit layout; float64 input rounded once; stochastic rounding with the CLI's streams."""

import numpy as np
import pytest

import numfid

SMALL_FORMATS = [f for f in numfid.formats() if numfid._numfid.format_info(f)["bits"] <= 16]


def cli_convert(cli, patterns, frm, to, *options):
    """`numfid convert` of integer patterns -> numpy uint32 patterns."""
    text = "".join(f"{int(p):#x}\n" for p in patterns)
    r = cli("convert", "--from", frm, "--to", to, *options, stdin=text)
    assert r.returncode == 0, r.stderr
    return np.array([int(line, 16) for line in r.stdout.split()], np.uint32)


def test_small_formats_are_the_expected_ones():
    assert set(SMALL_FORMATS) == {"fp16", "bf16", "fp8_e4m3", "fp8_e5m2", "fp8_e4m3fnuz", "fp8_e5m2fnuz", "fp6_e3m2",
                                  "fp6_e2m3", "fp4_e2m1", "e8m0", "int8", "uint8"}


@pytest.mark.parametrize("fmt", SMALL_FORMATS)
def test_all_patterns_round_trip_through_fp32(cli, fmt):
    bits = numfid._numfid.format_info(fmt)["bits"]
    container = np.uint8 if bits <= 8 else np.uint16
    patterns = np.arange(1 << bits, dtype=container)
    # An unsigned array holds the patterns of a float format; int8 is given as int8 values.
    given = patterns.view(np.int8) if fmt == "int8" else patterns
    # Patterns -> fp32, against the CLI.
    wide = numfid.convert(given, "fp32", from_=fmt, bits=True)
    assert wide.dtype == np.uint32
    assert np.array_equal(wide, cli_convert(cli, patterns, fmt, "fp32"))
    values = numfid.convert(given, "fp32", from_=fmt)
    assert values.dtype == np.float32 and np.array_equal(values.view(np.uint32), wide)
    # And back, from the float32 values: every pattern comes back except the NaNs, which come
    # back as the format's canonical NaN (as the CLI gives them).
    # int8's patterns come back as int8, as they were given: an unsigned array would hold values.
    back = numfid.convert(values, fmt, bits=True)
    assert back.dtype == given.dtype
    back = back.view(container)
    assert np.array_equal(back, cli_convert(cli, wide, "fp32", fmt).astype(container))
    nan = np.isnan(values)
    assert np.array_equal(back[~nan], patterns[~nan])  # int8: its two's-complement patterns
    # The same from the patterns directly (fmt -> fmt) is the identity but for NaN payloads.
    same = numfid.convert(given, fmt, from_=fmt, bits=True)
    assert same.dtype == given.dtype and np.array_equal(same.view(container)[~nan], patterns[~nan])


def test_fp16_against_numpy_float16():
    patterns = np.arange(1 << 16, dtype=np.uint16)
    mine = numfid.convert(patterns, "fp32", from_="fp16")
    ref = patterns.view(np.float16).astype(np.float32)
    assert np.array_equal(mine, ref, equal_nan=True)
    # fp32 -> fp16 under rne, on values between the fp16 ones: NumPy's cast rounds to nearest even.
    rng = np.random.default_rng(4)
    x = rng.standard_normal(100000).astype(np.float32) * np.float32(2.0) ** rng.integers(-30, 18, 100000)
    x = x.astype(np.float32)
    with np.errstate(over="ignore"):
        want = x.astype(np.float16).view(np.uint16)
    assert np.array_equal(numfid.convert(x, "fp16", bits=True), want)
    # A float16 array is its own container: read as fp16 values.
    assert np.array_equal(numfid.convert(ref.astype(np.float16), "fp32"), ref, equal_nan=True)


def test_bf16_is_the_top_half_of_fp32():
    patterns = np.arange(1 << 16, dtype=np.uint16)
    mine = numfid.convert(patterns, "fp32", from_="bf16", bits=True)
    nan = (patterns & 0x7FFF) > 0x7F80
    assert np.array_equal(mine[~nan], patterns[~nan].astype(np.uint32) << 16)
    assert np.all(mine[nan] & 0x7FFFFFFF == 0x7FC00000)  # NaN: fp32's canonical quiet NaN, sign kept
    # rtz narrowing of finite values is truncation of the low half.
    rng = np.random.default_rng(5)
    x = rng.integers(0, 1 << 32, 100000, dtype=np.uint64).astype(np.uint32)
    finite = np.isfinite(x.view(np.float32))
    got = numfid.convert(x.view(np.float32)[finite], "bf16", rounding="rtz", bits=True)
    assert np.array_equal(got, (x[finite] >> 16).astype(np.uint16))


def test_float64_is_rounded_once():
    # 1 + 2^-8 + 2^-40 rounds up to bf16 1 + 2^-7 in one step; through float32 it would be the
    # tie 1 + 2^-8, rounded to even (1.0).
    x = np.array([1 + 2.0 ** -8 + 2.0 ** -40, -(1 + 2.0 ** -8 + 2.0 ** -40), 1 / 3], np.float64)
    assert list(numfid.convert(x, "bf16", bits=True)) == [0x3F81, 0xBF81, 0x3EAB]
    assert list(numfid.convert(x.astype(np.float32), "bf16", bits=True)) == [0x3F80, 0xBF80, 0x3EAB]


def test_stochastic_rounding_matches_the_cli_streams(cli):
    rng = np.random.default_rng(6)
    x = rng.standard_normal(2000).astype(np.float32)
    for seed in (0, 7):
        got = numfid.convert(x, "bf16", rounding="stochastic", seed=seed, bits=True)
        want = cli_convert(cli, x.view(np.uint32), "fp32", "bf16", "--rounding", "stochastic", "--seed", seed)
        assert np.array_equal(got, want.astype(np.uint16))
    # Both neighbours occur, and each result is one of them.
    lo = numfid.convert(x, "bf16", rounding="rdn")
    hi = numfid.convert(x, "bf16", rounding="rup")
    sr = numfid.convert(x, "bf16", rounding="stochastic", seed=1)
    assert np.all((sr == lo) | (sr == hi))
    assert np.any((sr == lo) & (lo != hi)) and np.any((sr == hi) & (lo != hi))


def test_stochastic_rounding_with_few_random_bits(cli):
    # sr_bits=R: the top R discarded bits against R random bits, as the CLI's --sr-bits; with
    # one bit, a fraction below one half never rounds away from zero (the bias 2^-R allows).
    rng = np.random.default_rng(8)
    x = rng.standard_normal(2000).astype(np.float32)
    for r in (1, 4):
        got = numfid.convert(x, "bf16", rounding="stochastic", seed=3, sr_bits=r, bits=True)
        want = cli_convert(cli, x.view(np.uint32), "fp32", "bf16", "--rounding", "stochastic", "--seed", 3,
                           "--sr-bits", r)
        assert np.array_equal(got, want.astype(np.uint16))
    low = (x.view(np.uint32) & 0xFFFF) < 0x8000
    one = numfid.convert(x, "bf16", rounding="stochastic", seed=3, sr_bits=1)
    assert np.array_equal(one[low], numfid.convert(x[low], "bf16", rounding="rtz"))
    with pytest.raises(ValueError, match=r"sr_bits=8: random bits only matter for rounding='stochastic'"):
        numfid.convert(x, "bf16", sr_bits=8)
    with pytest.raises(ValueError, match=r"an integer from 1 to 64"):
        numfid.convert(x, "bf16", rounding="stochastic", sr_bits=0)


def test_saturate(cli):
    x = np.array([1e6, -1e6, np.inf], np.float32)
    assert list(numfid.convert(x, "fp8_e4m3", saturate=True)) == [448, -448, 448]
    got = numfid.convert(x, "fp8_e4m3", bits=True)
    assert np.array_equal(got, cli_convert(cli, x.view(np.uint32), "fp32", "fp8_e4m3").astype(np.uint8))


# A naive decoder from the format definitions (OCP OFP8 and MX specifications, IEEE 754),
# written from the specs and not from numfid: (exponent bits, mantissa bits, bias, special rule).
NAIVE = {
    "fp8_e4m3": (4, 3, 7, "e4m3"),          # no inf; S.1111.111 is NaN
    "fp8_e5m2": (5, 2, 15, "ieee"),
    "fp8_e4m3fnuz": (4, 3, 8, "fnuz"),      # 0x80 is the only NaN; no -0, no inf
    "fp8_e5m2fnuz": (5, 2, 16, "fnuz"),
    "fp6_e3m2": (3, 2, 3, "none"),          # no inf, no NaN
    "fp6_e2m3": (2, 3, 1, "none"),
    "fp4_e2m1": (2, 1, 1, "none"),
}


def naive_value(fmt, p):
    if fmt == "e8m0":
        return float("nan") if p == 0xFF else 2.0 ** (p - 127)
    if fmt == "int8":
        return float(p - 256 if p > 127 else p)
    if fmt == "uint8":
        return float(p)
    e_bits, m_bits, bias, rule = NAIVE[fmt]
    total = 1 + e_bits + m_bits
    sign = -1.0 if (p >> (total - 1)) & 1 else 1.0
    e = (p >> m_bits) & ((1 << e_bits) - 1)
    m = p & ((1 << m_bits) - 1)
    if rule == "fnuz" and p == 1 << (total - 1):
        return float("nan")
    if rule == "e4m3" and e == (1 << e_bits) - 1 and m == (1 << m_bits) - 1:
        return float("nan")
    if rule == "ieee" and e == (1 << e_bits) - 1:
        return sign * float("inf") if m == 0 else float("nan")
    if e == 0:
        return sign * m * 2.0 ** (1 - bias - m_bits)
    return sign * (1 + m / 2 ** m_bits) * 2.0 ** (e - bias)


@pytest.mark.parametrize("fmt", list(NAIVE) + ["e8m0", "int8", "uint8"])
def test_small_formats_against_a_naive_decoder(fmt):
    bits = numfid._numfid.format_info(fmt)["bits"]
    patterns = np.arange(1 << bits, dtype=np.uint8)
    given = patterns.view(np.int8) if fmt == "int8" else patterns
    got = numfid.convert(given, "fp32", from_=fmt).astype(np.float64)
    want = np.array([naive_value(fmt, int(p)) for p in patterns])
    assert np.array_equal(got, want, equal_nan=True), fmt
    # Signed zeros keep their sign (FNUZ formats have no -0: 0x80 is NaN, checked above).
    assert np.array_equal(np.signbit(got[got == 0]), np.signbit(want[want == 0]))


@pytest.mark.parametrize("seed", [-1, 2**64, 1.5, True, "7"])
def test_a_bad_seed_is_named(seed):
    with pytest.raises(ValueError, match="a seed is an integer in \\[0, 2\\^64 - 1\\]"):
        numfid.convert(np.array([1.1]), "bf16", rounding="stochastic", seed=seed)


def test_the_largest_seed_is_accepted():
    assert numfid.convert(np.array([1.1]), "bf16", rounding="stochastic", seed=2**64 - 1).shape == (1,)
    assert numfid.convert(np.array([1.1]), "bf16", rounding="stochastic", seed=np.uint64(5)).shape == (1,)


def test_a_scalar_keeps_its_shape():
    # np.ascontiguousarray makes 0-d arrays 1-d; results keep their operand's shape.
    for x in (np.float32(1.1), np.array(1.1, dtype=np.float32), np.array(1.1)):
        r = numfid.convert(x, "bf16")
        assert r.shape == () and r == np.float32(1.1015625)
    assert numfid.convert(np.ones((3, 4), np.float32)[:, ::2], "bf16").shape == (3, 2)
