// Verdict corpus: legal matmul outputs (every summation order an fp32-accumulation claim allows,
// and OpenBLAS) and defective ones (narrow or truncating accumulators, wrong casts, dropped or
// misread tiles, corrupted elements), each judged by numfid and by the default tolerances of
// torch.testing.assert_close and numpy.allclose into a Record (verdict_corpus.h).
#include "tests/verdict_corpus.h"

#include <algorithm>
#include <array>
#include <bit>
#include <climits>
#include <cmath>
#include <cstdint>
#include <functional>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "formats/convert.h"
#include "numerics/emulate.h"
#include "oracles/accumulator.h"
#include "tolerances/check.h"
#include "tolerances/verdict.h"

#if NUMFID_HAVE_OPENBLAS
#include <cblas.h>
#endif

namespace numfid::verdict_corpus {

// ------------------------------------------------------------------------------- corpus

const char* data_name(Data d) {
  switch (d) {
    case Data::normal: return "normal";
    case Data::positive: return "positive";
    case Data::cancellation: return "cancellation";
    case Data::wide: return "wide";
    case Data::constant: return "constant";
  }
  return "?";
}

namespace {

/// Every data kind, in the order of the tables.
constexpr std::array kAllData{Data::normal, Data::positive, Data::cancellation, Data::wide, Data::constant};

/// A truncating accumulator with a 14-bit significand and fp32's exponent range: the width
/// DeepSeek-V3 (report §3.3.2) measured for Hopper fp8 GEMM accumulation. A test-only row.
constexpr FormatSpec kAcc14{"acc14", FormatKind::binary_float, 22, 8, 14, 127, true, true, true,
                            NonFinite::ieee, NanEncoding::ieee, false,
                            "test-only: 1+8+13 bits, fp32 exponent range (DeepSeek-V3 §3.3.2)"};

/// The output formats judged for an input format (those a kernel with these inputs stores).
std::vector<const FormatSpec*> outputs_for(const FormatSpec& in) {
  if (&in == &bf16) return {&bf16, &fp32};
  if (&in == &fp16) return {&fp16, &fp32};
  if (&in == &fp8_e4m3) return {&bf16, &fp16, &fp32};
  return {&fp32};
}

/// A double rounded into `f` (round to nearest even, saturating: the generators aim inside
/// the range, and a draw in the tail must not become NaN).
Bits to_format(const FormatSpec& f, double x) {
  if (x == 0) return zero(f, std::signbit(x));
  int e = 0;
  const double m = std::frexp(std::fabs(x), &e);  // x = m·2^e, 0.5 <= m < 1
  RoundOptions o;
  o.overflow = Overflow::saturate;
  return round_to(f, Unrounded{x < 0, static_cast<std::uint64_t>(std::ldexp(m, 53)), e - 53, false}, o).bits;
}

/// The neighbour of `x` one ulp further from zero (x itself at the top of the range).
Bits away_from_zero(const FormatSpec& f, Bits x) {
  const Bits y{x.raw + 1};
  const FpClass c = classify(f, y);
  return fits(f, y) && (c == FpClass::normal || c == FpClass::subnormal) ? y : x;
}

Bits negate(const FormatSpec& f, Bits x) { return Bits{x.raw ^ (1u << (f.bits - 1))}; }

/// Binade range of the wide-range data: over most of the format's range, with subnormal
/// inputs (fp8, fp16) or products below fp32's normal range, 2^-126 (bf16, fp32).
std::pair<int, int> wide_exponents(const FormatSpec& f) {
  if (&f == &fp8_e4m3) return {-9, 6};  // subnormals from 2^-9; max 448
  if (&f == &fp16) return {-24, 5};     // subnormals from 2^-24; sums mostly inside fp16's range
  if (&f == &bf16) return {-75, 20};    // products down to 2^-150: subnormal in the fp32 accumulator
  return {-75, 25};
}

}  // namespace

Operands make_operands(const Slice& s) {
  std::mt19937_64 g(s.seed);
  std::normal_distribution<double> nd(0, 1);
  std::uniform_real_distribution<double> ud(0.1, 1.0);
  const auto [lo, hi] = wide_exponents(*s.in);
  std::uniform_int_distribution<int> ed(lo, hi);
  auto draw = [&] {
    switch (s.data) {
      case Data::positive: return to_format(*s.in, ud(g));
      case Data::wide: return to_format(*s.in, std::ldexp(nd(g), ed(g)));
      default: return to_format(*s.in, nd(g));
    }
  };
  Operands op{std::vector<Bits>(static_cast<std::size_t>(s.m * s.k)), std::vector<Bits>(static_cast<std::size_t>(s.k * s.n))};
  for (Bits& x : op.a) x = draw();
  for (Bits& x : op.b) x = draw();
  if (s.data == Data::constant) {
    for (std::int64_t i = 0; i < s.m; ++i) std::fill_n(op.a.begin() + i * s.k, s.k, to_format(*s.in, ud(g)));
    for (std::int64_t j = 0; j < s.n; ++j) {
      const Bits v = to_format(*s.in, ud(g));
      for (std::int64_t k = 0; k < s.k; ++k) op.b[k * s.n + j] = v;
    }
  }
  if (s.data == Data::cancellation) {
    // Pairs that nearly cancel: term k + K/2 is -a_k·b'_k with b'_k = b_k or its neighbour
    // one ulp further from zero, so each row·column sum is a small fraction of Σ|terms|.
    const std::int64_t h = s.k / 2;
    for (std::int64_t i = 0; i < s.m; ++i)
      for (std::int64_t j = 0; j < h; ++j) op.a[i * s.k + h + j] = negate(*s.in, op.a[i * s.k + j]);
    for (std::int64_t j = 0; j < h; ++j)
      for (std::int64_t l = 0; l < s.n; ++l)
        op.b[(h + j) * s.n + l] = g() % 2 ? away_from_zero(*s.in, op.b[j * s.n + l]) : op.b[j * s.n + l];
  }
  return op;
}

// ------------------------------------------------------------------------------- oracle

Oracle make_oracle(const Slice& s, const Operands& op) {
  Oracle o;
  o.ref = matmul_reference(TensorData{s.in, {s.m, s.k}, op.a, "A"}, TensorData{s.in, {s.k, s.n}, op.b, "B"});
  for (const ExactElement& e : o.ref.elements) {
    o.exact.push_back(e.exact);
    o.sum_abs.push_back(e.sum_abs);
  }
  o.calibration = calibrate_matmul(o.ref, parse_claim(fmt::format("--in {} --acc fp32 --out fp32", s.in->name)));
  return o;
}

namespace {

/// The claim of the corpus: inputs of the slice, fp32 accumulation (rne, any order), `out`.
ClaimSpec corpus_claim(const Slice& s, const FormatSpec& out, bool probabilistic_defects = false) {
  return parse_claim(fmt::format("--in {} --acc fp32 --out {}{}", s.in->name, out.name,
                                 probabilistic_defects ? " --probabilistic-defects" : ""));
}

}  // namespace

/// The library's check of output `c` (patterns of `out`) against the slice's exact results.
CheckResult check(const Slice& s, const Oracle& o, const FormatSpec& out, std::span<const Bits> c,
                  bool probabilistic_defects) {
  MatmulCheckOptions opt;
  opt.predict = false;
  opt.calibration = &o.calibration;
  return check_matmul(o.ref, TensorData{&out, {s.m, s.n}, {c.begin(), c.end()}, "C"},
                      corpus_claim(s, out, probabilistic_defects), opt);
}

// ------------------------------------------------------------------------------- outputs

namespace {

/// Accumulator-level results of one computation (patterns of `format`), before the output cast.
struct Computed {
  std::string name;
  const FormatSpec* format = &fp32;
  std::vector<Bits> acc;
};

}  // namespace

std::vector<Bits> emulate(const Slice& s, const FormatSpec& in, std::span<const Bits> a, std::span<const Bits> b,
                          const ReductionPlan& plan, const FormatSpec& acc, Rounding r) {
  ReductionModel m;
  m.plan = plan;
  m.acc.format = &acc;
  m.acc.rounding.rounding = r;
  m.output = &acc;
  return emulate_matmul({&in, a, s.m, s.k}, {&in, b, s.k, s.n}, std::nullopt, m);
}

namespace {

/// Runs `f(terms, element)` on the exact products of every element (fp32 results).
std::vector<Bits> per_element(const Slice& s, const Operands& op,
                              const std::function<Bits(std::vector<Term>&, std::int64_t)>& f) {
  std::vector<Bits> out(static_cast<std::size_t>(s.m * s.n));
  std::vector<Term> terms(static_cast<std::size_t>(s.k));
  for (std::int64_t i = 0; i < s.m; ++i)
    for (std::int64_t j = 0; j < s.n; ++j) {
      for (std::int64_t k = 0; k < s.k; ++k) terms[k] = exact_product(*s.in, op.a[i * s.k + k], *s.in, op.b[k * s.n + j]);
      out[i * s.n + j] = f(terms, i * s.n + j);
    }
  return out;
}

AccumulatorModel fp32_rne() { return {}; }

/// cblas_sgemm on the float values, single thread; nullopt without OpenBLAS.
std::optional<std::vector<Bits>> openblas(const Slice& s, const Operands& op) {
#if NUMFID_HAVE_OPENBLAS
  openblas_set_num_threads(1);
  std::vector<float> a(op.a.size()), b(op.b.size()), c(static_cast<std::size_t>(s.m * s.n));
  for (std::size_t i = 0; i < a.size(); ++i) a[i] = static_cast<float>(to_double(*s.in, op.a[i]));
  for (std::size_t i = 0; i < b.size(); ++i) b[i] = static_cast<float>(to_double(*s.in, op.b[i]));
  const int M = static_cast<int>(s.m), N = static_cast<int>(s.n), K = static_cast<int>(s.k);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, M, N, K, 1.0f, a.data(), K, b.data(), N, 0.0f, c.data(), N);
  std::vector<Bits> r(c.size());
  for (std::size_t i = 0; i < c.size(); ++i) r[i] = Bits{std::bit_cast<std::uint32_t>(c[i])};
  return r;
#else
  (void)s;
  (void)op;
  return std::nullopt;
#endif
}

/// Every order the claim "fp32 accumulation, round to nearest even, order unspecified" allows
/// that numfid can run, each element one fp32 sum of the exact products.
std::vector<Computed> legal_sums(const Slice& s, const Operands& op) {
  std::vector<Computed> r;
  for (const char* text : {"sequential", "reverse", "pairwise", "blocked(128)", "blocked(128, pairwise)", "splitk(4)",
                           "strided(32)", "numpy"})
    r.push_back({text, &fp32, emulate(s, *s.in, op.a, op.b, *ReductionPlan::parse(text), fp32)});
  // Random permutations, a different one for each element (the claim allows that).
  for (std::uint64_t p = 0; p < 4; ++p)
    r.push_back({fmt::format("random permutation {}", p), &fp32, per_element(s, op, [&](std::vector<Term>& t, std::int64_t e) {
                   std::mt19937_64 g(s.seed * 7919 + p * 104729 + static_cast<std::uint64_t>(e));
                   std::shuffle(t.begin(), t.end(), g);
                   return numfid::reduce(ReductionPlan{}, fp32_rne(), t);
                 })});
  // Orders chosen to make the error large or small, not random: largest |term| first (the
  // partial sums reach their full size at once, so every later rounding is at the largest
  // ulp), smallest first (Higham ASNA §4.2: increasing order is the usual recommendation), and
  // all positive terms before all negative ones, largest first (the partial sums peak at the
  // positive part, the worst case of a cancelling sum).
  using Less = std::function<bool(const Term&, const Term&)>;
  auto magnitude = [](const Term& t) {
    return t.cls == FpClass::normal ? std::ldexp(static_cast<double>(t.value.significand), t.value.exponent) : 0.0;
  };
  auto signed_value = [&](const Term& t) { return t.value.negative ? -magnitude(t) : magnitude(t); };
  const std::vector<std::pair<const char*, Less>> sorts{
      {"decreasing |term|", [&](const Term& x, const Term& y) { return magnitude(x) > magnitude(y); }},
      {"increasing |term|", [&](const Term& x, const Term& y) { return magnitude(x) < magnitude(y); }},
      {"positive first, decreasing", [&](const Term& x, const Term& y) { return signed_value(x) > signed_value(y); }}};
  for (const auto& [name, less] : sorts)
    r.push_back({name, &fp32, per_element(s, op, [&](std::vector<Term>& t, std::int64_t) {
                   std::stable_sort(t.begin(), t.end(), less);
                   return numfid::reduce(ReductionPlan{}, fp32_rne(), t);
                 })});
  if (auto blas = openblas(s, op)) r.push_back({"OpenBLAS sgemm", &fp32, std::move(*blas)});
  return r;
}

/// The defect classes, each with the signature that should name it ("" where none does).
struct DefectKind {
  const char* name;
  const char* signature;
};

/// A defective computation at accumulator level.
struct DefectSum {
  DefectKind kind;
  Computed result;
};

/// Output elements of the tile the indexing defects corrupt: rows [0, m/2) × columns [0, n/2).
bool in_tile(const Slice& s, std::int64_t e) { return e / s.n < s.m / 2 && e % s.n < s.n / 2; }

/// Length of the K-tile the dropped/misread-tile defects use: 128, or K/4 for short K.
std::int64_t k_tile(const Slice& s) { return std::min<std::int64_t>(128, s.k / 4); }

std::vector<DefectSum> defective_sums(const Slice& s, const Operands& op, const std::vector<Bits>& sequential) {
  std::vector<DefectSum> r;
  const ReductionPlan seq{};
  for (const FormatSpec* f : {&bf16, &fp16, &tf32})
    r.push_back({{"accumulator narrower than fp32", "narrow-accumulator"},
                 {fmt::format("acc {}", f->name), f, emulate(s, *s.in, op.a, op.b, seq, *f)}});
  r.push_back({{"14-bit truncating accumulator", "narrow-accumulator"},
               {"acc 14 bits rtz", &kAcc14, emulate(s, *s.in, op.a, op.b, seq, kAcc14, Rounding::rtz)}});
  r.push_back({{"products rounded to bf16", ""},
               {"products -> bf16", &fp32, per_element(s, op, [](std::vector<Term>& t, std::int64_t) {
                  for (Term& x : t)
                    if (x.cls == FpClass::normal) x = as_term(bf16, round_to(bf16, x.value, {}).bits);
                  return numfid::reduce(ReductionPlan{}, fp32_rne(), t);
                })}});
  r.push_back({{"split-K partials rounded to bf16", ""},
               {"splitk(4) partials -> bf16", &fp32, per_element(s, op, [&](std::vector<Term>& t, std::int64_t) {
                  const std::size_t c = static_cast<std::size_t>((s.k + 3) / 4);
                  std::vector<Term> parts;
                  for (std::size_t lo = 0; lo < t.size(); lo += c) {
                    const Bits p = numfid::reduce(ReductionPlan{}, fp32_rne(), std::span<const Term>(t).subspan(lo, std::min(c, t.size() - lo)));
                    parts.push_back(as_term(bf16, convert(fp32, bf16, p).bits));
                  }
                  return numfid::reduce(ReductionPlan{}, fp32_rne(), parts);
                })}});
  // A dropped K-tile: terms [T, 2T) missing (zero products add exactly, so zeroing A's
  // columns drops them), from every element or from one output tile only.
  const std::int64_t T = k_tile(s);
  {
    std::vector<Bits> a = op.a;
    for (std::int64_t i = 0; i < s.m; ++i)
      for (std::int64_t k = T; k < 2 * T; ++k) a[i * s.k + k] = zero(*s.in, false);
    std::vector<Bits> dropped = emulate(s, *s.in, a, op.b, seq, fp32);
    r.push_back({{"dropped K tile (every element)", ""}, {"dropped K tile, all", &fp32, dropped}});
    for (std::size_t e = 0; e < dropped.size(); ++e)
      if (!in_tile(s, static_cast<std::int64_t>(e))) dropped[e] = sequential[e];
    r.push_back({{"dropped K tile (one output tile)", "confined"}, {"dropped K tile, one output tile", &fp32, dropped}});
  }
  {
    // One output tile computed from A shifted by one row (row i read as row i + 1).
    std::vector<Bits> a(op.a.size());
    for (std::int64_t i = 0; i < s.m; ++i)
      std::copy_n(op.a.begin() + ((i + 1) % s.m) * s.k, s.k, a.begin() + i * s.k);
    std::vector<Bits> wrong = emulate(s, *s.in, a, op.b, seq, fp32);
    for (std::size_t e = 0; e < wrong.size(); ++e)
      if (!in_tile(s, static_cast<std::int64_t>(e))) wrong[e] = sequential[e];
    r.push_back({{"tile read at wrong offset", "confined"}, {"A shifted by one row, one output tile", &fp32, wrong}});
  }
  {
    // One output tile computed with B's first K-tile read from the second one's offset.
    std::vector<Bits> b = op.b;
    std::copy_n(op.b.begin() + T * s.n, T * s.n, b.begin());
    std::vector<Bits> wrong = emulate(s, *s.in, op.a, b, seq, fp32);
    for (std::size_t e = 0; e < wrong.size(); ++e)
      if (!in_tile(s, static_cast<std::int64_t>(e))) wrong[e] = sequential[e];
    r.push_back({{"tile read at wrong offset", "confined"}, {"B shifted by one K-tile, one output tile", &fp32, wrong}});
  }
  if (s.in != &fp8_e4m3) {
    // Inputs silently quantised to fp8 e4m3 (saturating) before an otherwise correct matmul.
    RoundOptions o;
    o.overflow = Overflow::saturate;
    std::vector<Bits> a(op.a.size()), b(op.b.size());
    for (std::size_t i = 0; i < a.size(); ++i) a[i] = convert(*s.in, fp8_e4m3, op.a[i], o).bits;
    for (std::size_t i = 0; i < b.size(); ++i) b[i] = convert(*s.in, fp8_e4m3, op.b[i], o).bits;
    r.push_back({{"inputs quantised to fp8_e4m3", ""}, {"inputs -> fp8_e4m3", &fp32, emulate(s, fp8_e4m3, a, b, seq, fp32)}});
  }
  return r;
}

std::vector<Bits> cast_all(const FormatSpec& from, const FormatSpec& to, std::span<const Bits> x,
                           Rounding r = Rounding::rne) {
  RoundOptions o;
  o.rounding = r;
  std::vector<Bits> y(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) y[i] = convert(from, to, x[i], o).bits;
  return y;
}

// ------------------------------------------------------------------------------- judges

/// torch.testing.assert_close / numpy.allclose: |actual - expected| <= atol + rtol·|expected|
/// elementwise, in float64 (torch promotes floating tensors to float64 before isclose:
/// torch/testing/_comparison.py, _promote_for_comparison); ±inf close only to itself, NaN
/// never (equal_nan=False, the default of both).
bool allclose(const FormatSpec& out, std::span<const Bits> actual, std::span<const ReferenceElement> ref, double rtol,
              double atol) {
  for (std::size_t e = 0; e < actual.size(); ++e) {
    const double a = to_double(out, actual[e]), x = to_double(out, ref[e].rounded);
    if (std::isnan(a) || std::isnan(x)) return false;
    if (std::isinf(a) || std::isinf(x)) {
      if (a != x) return false;
      continue;
    }
    if (!(std::fabs(a - x) <= atol + rtol * std::fabs(x))) return false;
  }
  return true;
}

/// torch.testing.assert_close's default (rtol, atol) for a dtype (torch/testing/_comparison.py,
/// _DTYPE_PRECISIONS).
std::pair<double, double> torch_defaults(const FormatSpec& out) {
  if (&out == &bf16) return {1.6e-2, 1e-5};
  if (&out == &fp16) return {1e-3, 1e-5};
  return {1.3e-6, 1e-5};
}

/// The deterministic bound derived here, independently of tolerances/bounds.cpp, from Higham
/// ASNA 2nd ed. (3.4)-(3.5) and §4.2: any order of m exact products summed in fp32 (u = 2^-24)
/// errs by at most γ_n·Σ|t| with n = m - 1 (+1 when a product needs more than fp32's 24 bits and
/// is itself rounded when added first), plus half the least fp32 subnormal 2^-149 per rounding
/// that underflows; the result's rounding into the output format adds half an ulp at the
/// largest magnitude the sum can have. A 1e-9 relative margin absorbs double arithmetic here.
double independent_bound(const Slice& s, const FormatSpec& out, double exact, double sum_abs) {
  const double n = static_cast<double>(s.k - 1 + (2 * s.in->precision > 24 ? 1 : 0));
  const double u = 0x1p-24;
  const double reduction = n * u / (1 - n * u) * sum_abs + n * 0x1p-150;
  const double top = std::fabs(exact) + reduction;
  const int e = std::max(top > 0 ? std::ilogb(top) : INT_MIN, emin(out));
  return (reduction + std::ldexp(1.0, e - out.precision) + std::fabs(exact) * 0x1p-52) * (1 + 1e-9);
}

/// Legal outputs of one slice and output format, elementwise: largest |error| and the patterns.
struct LegalSpread {
  std::vector<double> max_error, low, high;
  std::vector<std::vector<Bits>> patterns;
};

Record judge_one(const Slice& s, const FormatSpec& out, const Oracle& o, std::span<const ReferenceElement> ref,
                 std::string source, DefectKind kind, std::span<const Bits> c, const LegalSpread* spread) {
  Record r{s.name(), s.in, s.data, s.k, &out, std::move(source), kind.name, kind.signature, {}, {}, false, false, false, 0,
           0, 0, 0, 0, static_cast<std::int64_t>(c.size()), {}};
  CheckResult checked = check(s, o, out, c);
  r.verdict = std::move(checked.verdict);
  const ReductionBound& b = checked.bound;
  r.kind_prob = check(s, o, out, c, true).verdict.kind;
  Claim claim;  // the bound's claim, for the per-element probabilistic bound below
  claim.input = s.in;
  claim.output = &out;
  const auto [rtol, atol] = torch_defaults(out);
  r.torch_pass = allclose(out, c, ref, rtol, atol);
  r.numpy_pass = allclose(out, c, ref, 1e-5, 1e-8);
  for (std::size_t e = 0; e < c.size(); ++e) {
    const double v = to_double(out, c[e]);
    const double bound = independent_bound(s, out, o.exact[e], o.sum_abs[e]);
    double err = std::fabs(v - o.exact[e]);
    if (std::isnan(v)) err = INFINITY;
    if (std::isinf(v) && std::fabs(o.exact[e]) + bound >= max_finite(out))
      err = 0;  // an overflow that the sum's error might cause: not counted as provable
    r.bound_ratio = std::max(r.bound_ratio, err / bound);
    r.prob_ratio = std::max(r.prob_ratio, err / element_bound(b, claim, o.exact[e], o.sum_abs[e]).probabilistic);
    r.provable = r.provable || err > bound;
    if (spread) {
      const double le = spread->max_error[e];
      const double ratio = err == 0 ? 0.0 : le > 0 ? err / le : INFINITY;
      if (ratio > r.legal_ratio || r.element.empty()) {
        // The element furthest beyond the legal outputs, in output ulps at the exact value.
        const double ulp = ulp_at(out, o.exact[e]);
        r.element = fmt::format("[{}, {}]: |error| {:.3g} ulps, legal orders up to {:.3g} ulps (from {:.9g} to {:.9g}), "
                                "deterministic bound {:.3g} ulps",
                                static_cast<std::int64_t>(e) / s.n, static_cast<std::int64_t>(e) % s.n, err / ulp,
                                le / ulp, spread->low[e], spread->high[e], bound / ulp);
      }
      r.legal_ratio = std::max(r.legal_ratio, ratio);
      r.reproduced += std::find(spread->patterns[e].begin(), spread->patterns[e].end(), c[e]) != spread->patterns[e].end();
      r.bracketed += spread->low[e] <= v && v <= spread->high[e];
    }
  }
  if (!spread) r.reproduced = r.bracketed = r.elements;
  return r;
}

}  // namespace

/// Every output of one slice, judged.
std::vector<Record> run_slice(const Slice& s) {
  const Operands op = make_operands(s);
  const Oracle o = make_oracle(s, op);
  const std::vector<Computed> legal = legal_sums(s, op);
  const std::vector<Bits>& sequential = legal.front().acc;
  const std::vector<DefectSum> defects = defective_sums(s, op, sequential);
  std::vector<Record> records;
  for (const FormatSpec* out : outputs_for(*s.in)) {
    std::vector<ReferenceElement> ref;
    for (const ExactElement& e : o.ref.elements) ref.push_back({e.rounded(*out), e.exact, e.sum_abs});
    LegalSpread spread{std::vector<double>(ref.size()), std::vector<double>(ref.size(), INFINITY),
                       std::vector<double>(ref.size(), -INFINITY), std::vector<std::vector<Bits>>(ref.size())};
    for (const Computed& c : legal) {
      const std::vector<Bits> y = cast_all(*c.format, *out, c.acc);
      for (std::size_t e = 0; e < y.size(); ++e) {
        const double v = to_double(*out, y[e]);
        const double err = std::fabs(v - o.exact[e]);
        spread.max_error[e] = std::max(spread.max_error[e], std::isnan(err) ? INFINITY : err);
        spread.low[e] = std::min(spread.low[e], v);
        spread.high[e] = std::max(spread.high[e], v);
        spread.patterns[e].push_back(y[e]);
      }
      records.push_back(judge_one(s, *out, o, ref, c.name, {"", ""}, y, nullptr));
    }
    const std::vector<Bits> seq_out = cast_all(fp32, *out, sequential);
    auto add = [&](DefectKind kind, std::string source, const std::vector<Bits>& y) {
      records.push_back(judge_one(s, *out, o, ref, std::move(source), kind, y, &spread));
    };
    for (const DefectSum& d : defects) add(d.kind, d.result.name, cast_all(*d.result.format, *out, d.result.acc));
    if (out != &fp32) add({"truncating output cast (rtz)", "bias"}, "output cast rtz", cast_all(fp32, *out, sequential, Rounding::rtz));
    if (out != &fp16)
      add({"double rounding through fp16", ""}, "fp32 -> fp16 -> out", cast_all(fp16, *out, cast_all(fp32, fp16, sequential)));
    {
      std::vector<Bits> y = seq_out;
      for (std::int64_t i = 0; i < s.m; ++i) y[i * s.n + s.n / 2] = zero(*out, false);
      add({"zeroed column", "confined"}, fmt::format("column {} zeroed", s.n / 2), y);
    }
    {
      // One element 3 ulps further from zero (3 ulps closer where that would leave the range).
      std::vector<Bits> y = seq_out;
      Bits& x = y[(s.m / 2) * s.n + s.n / 2 - 1];
      const Bits up{x.raw + 3};
      const FpClass c = classify(*out, up);
      x = (c == FpClass::normal || c == FpClass::subnormal) ? up : Bits{x.raw - 3};
      add({"one element off by 3 ulps", "lone-outlier"}, "element +3 ulps", y);
    }
  }
  return records;
}

std::vector<std::pair<std::string, std::vector<Bits>>> legal_results(const Slice& s, const Operands& op) {
  std::vector<std::pair<std::string, std::vector<Bits>>> r;
  for (Computed& c : legal_sums(s, op)) r.emplace_back(std::move(c.name), std::move(c.acc));
  return r;
}

std::vector<std::pair<std::string, std::vector<Bits>>> defect_results(const Slice& s, const Operands& op) {
  std::vector<std::pair<std::string, std::vector<Bits>>> r;
  const std::vector<Bits> seq = emulate(s, *s.in, op.a, op.b, ReductionPlan{}, fp32);
  for (const DefectSum& d : defective_sums(s, op, seq))
    r.emplace_back(d.result.name, cast_all(*d.result.format, fp32, d.result.acc));
  return r;
}

std::vector<Bits> convert_all(const FormatSpec& from, const FormatSpec& to, std::span<const Bits> x, Rounding r) {
  return cast_all(from, to, x, r);
}

bool torch_close(const FormatSpec& out, std::span<const Bits> actual, std::span<const ReferenceElement> ref) {
  const auto [rtol, atol] = torch_defaults(out);
  return allclose(out, actual, ref, rtol, atol);
}

std::vector<Slice> corpus() {
  std::vector<Slice> slices;
  const std::vector<std::int64_t> ks = kFull ? std::vector<std::int64_t>{64, 256, 1024, 4096, 16384}
                                             : std::vector<std::int64_t>{64, 1024, 4096};
  const std::int64_t mn = kFull ? 16 : 8;
  std::uint64_t seed = 1;
  for (const FormatSpec* in : {&bf16, &fp16, &fp8_e4m3, &fp32})
    for (Data d : kAllData)
      for (std::int64_t k : ks) slices.push_back({in, d, k, mn, mn, 0x5eed0000 + seed++});
  return slices;
}

}  // namespace numfid::verdict_corpus
