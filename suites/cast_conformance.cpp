// Cast conformance: the inputs of each case, the expected patterns from convert(), and the
// comparison with the input named beside every mismatch.
#include "suites/cast_conformance.h"

#include <bit>
#include <cmath>
#include <sstream>

#include <fmt/format.h>

#include "formats/convert.h"
#include "formats/error.h"
#include "formats/ulp.h"
#include "suites/bits_eq.h"
#include "suites/print.h"

namespace numfid::testing {

namespace {

RoundOptions round_options(const CastSuiteOptions& o) {
  RoundOptions r;
  r.rounding = o.rounding;
  r.overflow = o.saturate ? Overflow::saturate : Overflow::ieee;
  r.ftz = o.ftz;
  r.daz = o.daz;
  return r;
}

std::uint64_t pattern_count(const FormatSpec& f) { return std::uint64_t{1} << f.bits; }

/// The patterns [first, last) of chunk `i` of `chunks` over `n` patterns.
std::pair<std::uint64_t, std::uint64_t> slice(std::uint64_t n, int i, int chunks) {
  const auto c = static_cast<std::uint64_t>(chunks);
  return {n * static_cast<std::uint64_t>(i) / c, n * static_cast<std::uint64_t>(i + 1) / c};
}

Bits fp32_of(double x) { return Bits{std::bit_cast<std::uint32_t>(static_cast<float>(x))}; }

}  // namespace

void PrintTo(const CastCase& c, std::ostream* os) {
  *os << fmt::format("{} ({} -> {}, chunk {} of {}, rounding {}{}{})", c.name, c.from, c.to, c.chunk + 1, c.chunks,
                     rounding_name(c.options.rounding), c.options.saturate ? ", saturate" : "", c.options.ftz ? ", ftz" : "");
}

std::vector<CastCase> cast_cases(std::string_view from, std::string_view to, const CastSuiteOptions& o) {
  const FormatSpec& f = format_named(from);
  const FormatSpec& t = format_named(to);
  if (f.bits > 16 && !(f.name == fp32.name && t.bits <= 16))
    throw InputError(fmt::format("cast conformance: {} -> {}: the source must have at most 16 bits, or be fp32 with a "
                                 "destination of at most 16 bits",
                                 f.name, t.name));
  const std::uint64_t n = pattern_count(f.bits <= 16 ? f : t);
  const int chunks = static_cast<int>(std::min<std::uint64_t>(static_cast<std::uint64_t>(std::max(o.chunks, 1)), n));
  std::vector<CastCase> cases;
  for (int i = 0; i < chunks; ++i)
    cases.push_back({fmt::format("{}_to_{}_{}_of_{}", f.name, t.name, i + 1, chunks), std::string(f.name),
                     std::string(t.name), i, chunks, o});
  return cases;
}

std::string cast_case_name(const ::testing::TestParamInfo<CastCase>& info) { return info.param.name; }

TensorData cast_input(const CastCase& c) {
  const FormatSpec& f = format_named(c.from);
  const FormatSpec& t = format_named(c.to);
  std::vector<Bits> in;
  if (f.bits <= 16) {
    const auto [first, last] = slice(pattern_count(f), c.chunk, c.chunks);
    for (std::uint64_t p = first; p < last; ++p) in.push_back(Bits{static_cast<std::uint32_t>(p)});
  } else {
    // fp32 -> a <= 16-bit destination: around every destination value d (finite), the fp32
    // values at d, at the midpoint to d's upper neighbour (a tie), one fp32 ulp either side of
    // that midpoint, and a seeded random point between d and the neighbour.
    const auto [first, last] = slice(pattern_count(t), c.chunk, c.chunks);
    std::uint64_t state = c.options.seed ^ (static_cast<std::uint64_t>(c.chunk) * 0x9e3779b97f4a7c15ull);
    for (std::uint64_t p = first; p < last; ++p) {
      const Bits d{static_cast<std::uint32_t>(p)};
      const double x = to_double(t, d);
      if (!std::isfinite(x)) {
        in.push_back(fp32_of(x));
        continue;
      }
      in.push_back(fp32_of(x));
      const std::optional<Bits> up = next_up(t, d);
      // Above the largest finite value the "neighbour" is one ulp further (the overflow threshold).
      const double y = up && std::isfinite(to_double(t, *up)) ? to_double(t, *up) : x + ulp(t, d);
      const double mid = (x + y) / 2;
      const Bits m = fp32_of(mid);
      in.push_back(m);
      in.push_back(Bits{m.raw + 1});
      if ((m.raw & 0x7fffffffu) != 0) in.push_back(Bits{m.raw - 1});
      state = state * 6364136223846793005ull + 1442695040888963407ull;
      in.push_back(fp32_of(x + (y - x) * static_cast<double>(state >> 11) * 0x1p-53));
    }
    if (c.chunk == 0)  // fp32's own specials: NaN, ±inf, ±max, the least subnormal
      for (const std::uint32_t s : {0x7fc00000u, 0xffc00001u, 0x7f800000u, 0xff800000u, 0x7f7fffffu, 0xff7fffffu, 0x1u})
        in.push_back(Bits{s});
  }
  const auto n = static_cast<std::int64_t>(in.size());
  return TensorData{&f, {n}, std::move(in), std::string("X")};
}

TensorData cast_expected(const CastCase& c, const TensorData& input) {
  const FormatSpec& t = format_named(c.to);
  const RoundOptions o = round_options(c.options);
  std::vector<Bits> values;
  values.reserve(input.values.size());
  for (const Bits b : input.values) values.push_back(convert(*input.format, t, b, o).bits);
  return TensorData{&t, input.shape, std::move(values), std::string("expected")};
}

void run_cast_case(const CastKernel& kernel, const CastCase& c) {
  std::ostringstream os;
  os << "cast case ";
  PrintTo(c, &os);
  const std::string text = os.str();
  SCOPED_TRACE(text);
  const TensorData x = cast_input(c);
  const TensorData want = cast_expected(c, x);
  const TensorData got = kernel(x);
  const FormatSpec& t = *want.format;
  if (got.format->name != t.name || got.values.size() != want.values.size()) {
    ADD_FAILURE() << "the cast returned " << got.format->name << " with " << got.values.size() << " elements for "
                  << x.values.size() << " " << x.format->name << " inputs; expected " << t.name;
    return;
  }
  std::int64_t mismatches = 0;
  std::string shown;
  for (std::size_t i = 0; i < x.values.size(); ++i) {
    if (got.values[i] == want.values[i]) continue;
    if (c.options.any_nan && is_nan(t, got.values[i]) && is_nan(t, want.values[i])) continue;
    if (mismatches++ < kBitsMismatchesShown)
      shown += fmt::format("    input {}\n      expected {}\n      got      {}\n", describe_bits(*x.format, x.values[i]),
                           describe_bits(t, want.values[i]), describe_bits(t, got.values[i]));
  }
  ::testing::Test::RecordProperty("numfid_inputs", static_cast<int>(x.values.size()));
  if (mismatches > 0)
    ADD_FAILURE() << "the cast differs from numfid's correctly rounded " << x.format->name << " -> " << t.name << " ("
                  << rounding_name(c.options.rounding) << ") in " << mismatches << " of " << x.values.size()
                  << " inputs" << (mismatches > kBitsMismatchesShown ? fmt::format("; the first {}:", kBitsMismatchesShown) : ":")
                  << "\n"
                  << shown;
}

}  // namespace numfid::testing
