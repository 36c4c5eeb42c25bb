// Tests of formats/bulk.h: every dispatch path against the scalar numfid::convert (the oracle:
// an independent uint128 decode-and-round-once implementation), plus spec-derived values.
#include "formats/bulk.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cstdint>
#include <ostream>
#include <random>
#include <span>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "formats/convert.h"

namespace numfid {
namespace {

// NaN policy: bitwise. The bulk path must give the very pattern convert gives, NaNs
// included (the target's canonical NaN with the input's sign where the format has one).

/// The formats with a vectorised kernel, by element width.
const std::array<const FormatSpec*, 2> k16{&bf16, &fp16};
const std::array<const FormatSpec*, 4> k8{&fp8_e4m3, &fp8_e5m2, &fp8_e4m3fnuz, &fp8_e5m2fnuz};

/// Every path this CPU can run, `automatic` included.
std::vector<BulkPath> available_paths() {
  std::vector<BulkPath> out;
  for (BulkPath p : {BulkPath::automatic, BulkPath::portable, BulkPath::avx2, BulkPath::avx512})
    if (bulk_path_available(p)) out.push_back(p);
  return out;
}

/// Options crossed: rounding (rne, rtz) x overflow x FTZ x DAZ.
[[maybe_unused]] std::vector<RoundOptions> fast_option_sets() {
  std::vector<RoundOptions> out;
  for (Rounding r : {Rounding::rne, Rounding::rtz})
    for (Overflow ov : {Overflow::ieee, Overflow::saturate})
      for (bool ftz : {false, true})
        for (bool daz : {false, true}) {
          RoundOptions o;
          o.rounding = r;
          o.overflow = ov;
          o.ftz = ftz;
          o.daz = daz;
          out.push_back(o);
        }
  return out;
}

std::string describe(const RoundOptions& o) {
  return fmt::format("rounding={} overflow={} ftz={} daz={} seed={} stream={}", rounding_name(o.rounding),
                     o.overflow == Overflow::ieee ? "ieee" : "saturate", o.ftz, o.daz, o.seed, o.stream);
}

std::string describe(const FormatSpec& f, std::uint32_t raw) {
  return fmt::format("{} ({:a})", to_hex(f, Bits{raw}), to_double(f, Bits{raw}));
}

/// Compares a bulk result with the oracle element by element; reports the first 10
/// mismatches in full and counts the rest.
class Mismatches {
 public:
  Mismatches(const FormatSpec& from, const FormatSpec& to) : from_(from), to_(to) {}
  ~Mismatches() {
    if (count_ > 10) ADD_FAILURE() << count_ << " mismatches in all (first 10 shown)";
  }
  void check(std::size_t index, std::uint32_t input, std::uint32_t got, std::uint32_t want) {
    if (got == want) return;
    if (++count_ <= 10)
      ADD_FAILURE() << "element " << index << ": " << from_.name << " " << describe(from_, input) << " -> "
                    << to_.name << ": bulk " << describe(to_, got) << ", convert " << describe(to_, want);
  }
  std::size_t count() const { return count_; }

 private:
  const FormatSpec& from_;
  const FormatSpec& to_;
  std::size_t count_ = 0;
};

std::vector<std::uint32_t> oracle(const FormatSpec& from, const FormatSpec& to, const std::vector<std::uint32_t>& in,
                                  const RoundOptions& o) {
  std::vector<std::uint32_t> out(in.size());
  RoundOptions oi = o;
  for (std::size_t i = 0; i < in.size(); ++i) {
    oi.stream = o.stream + i;
    out[i] = convert(from, to, Bits{in[i]}, oi).bits.raw;
  }
  return out;
}

/// fp32 -> `to` through the bulk API on `path`, returned widened to uint32 for comparison.
std::vector<std::uint32_t> bulk_narrow(const FormatSpec& to, std::span<const std::uint32_t> in,
                                       const RoundOptions& o, BulkPath path) {
  std::vector<std::uint32_t> out(in.size());
  if (to.bits > 8) {
    std::vector<std::uint16_t> d(in.size());
    convert_from_fp32(to, in, std::span<std::uint16_t>(d), o, path);
    std::copy(d.begin(), d.end(), out.begin());
  } else {
    std::vector<std::uint8_t> d(in.size());
    convert_from_fp32(to, in, std::span<std::uint8_t>(d), o, path);
    std::copy(d.begin(), d.end(), out.begin());
  }
  return out;
}

/// Checks every path on `in` for fp32 -> `to` under `o`.
[[maybe_unused]] void check_narrow_all_paths(const FormatSpec& to, const std::vector<std::uint32_t>& in, const RoundOptions& o) {
  const std::vector<std::uint32_t> want = oracle(fp32, to, in, o);
  for (BulkPath path : available_paths()) {
    SCOPED_TRACE(fmt::format("path {}", bulk_path_name(path)));
    const std::vector<std::uint32_t> got = bulk_narrow(to, in, o, path);
    Mismatches m(fp32, to);
    for (std::size_t i = 0; i < in.size() && m.count() < 1000; ++i) m.check(i, in[i], got[i], want[i]);
  }
}

#if NUMFID_BULK_EXHAUSTIVE
// ---------------------------------------------------------------------------------------
// Every fp32 pattern (2^32) for each format under the main option sets (label exhaustive).

struct SweepCase {
  const FormatSpec* to;
  RoundOptions o;
};

std::vector<SweepCase> sweep_cases() {
  std::vector<SweepCase> out;
  for (const FormatSpec* f : {&bf16, &fp16, &fp8_e4m3, &fp8_e5m2, &fp8_e4m3fnuz, &fp8_e5m2fnuz}) {
    RoundOptions rne;
    RoundOptions sat;
    sat.overflow = Overflow::saturate;
    RoundOptions rtz;
    rtz.rounding = Rounding::rtz;
    RoundOptions flush;
    flush.ftz = true;
    flush.daz = true;
    for (const RoundOptions& o : {rne, sat, rtz, flush}) out.push_back({f, o});
  }
  return out;
}

void PrintTo(const SweepCase& c, std::ostream* os) { *os << c.to->name << " " << describe(c.o); }

class BulkSweep : public ::testing::TestWithParam<SweepCase> {};

TEST_P(BulkSweep, AllFp32Patterns) {
  const SweepCase& c = GetParam();
  SCOPED_TRACE(fmt::format("{} {}", c.to->name, describe(c.o)));
  constexpr std::size_t chunk = std::size_t{1} << 20;
  std::vector<std::uint32_t> in(chunk);
  const std::vector<BulkPath> paths = available_paths();
  std::vector<std::size_t> failures(paths.size(), 0);
  for (std::uint64_t base = 0; base < (std::uint64_t{1} << 32); base += chunk) {
    for (std::size_t i = 0; i < chunk; ++i) in[i] = static_cast<std::uint32_t>(base + i);
    const std::vector<std::uint32_t> want = oracle(fp32, *c.to, in, c.o);
    for (std::size_t p = 0; p < paths.size(); ++p) {
      if (failures[p] >= 10) continue;
      const std::vector<std::uint32_t> got = bulk_narrow(*c.to, in, c.o, paths[p]);
      for (std::size_t i = 0; i < chunk && failures[p] < 10; ++i) {
        if (got[i] == want[i]) continue;
        ++failures[p];
        ADD_FAILURE() << "path " << bulk_path_name(paths[p]) << ": fp32 " << describe(fp32, in[i]) << " -> "
                      << c.to->name << ": bulk " << describe(*c.to, got[i]) << ", convert "
                      << describe(*c.to, want[i]);
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Exhaustive, BulkSweep, ::testing::ValuesIn(sweep_cases()),
                         [](const ::testing::TestParamInfo<SweepCase>& param_info) {
                           const RoundOptions& o = param_info.param.o;
                           std::string name = std::string(param_info.param.to->name) + "_" +
                                              std::string(rounding_name(o.rounding));
                           if (o.overflow == Overflow::saturate) name += "_saturate";
                           if (o.ftz) name += "_ftz";
                           if (o.daz) name += "_daz";
                           return name;
                         });

#else  // the default (unit) suite
// ---------------------------------------------------------------------------------------
// Values from the specs, written down independently of both implementations.

TEST(Bulk, SpecValues) {
  struct Case {
    const FormatSpec* to;
    std::uint32_t in;
    Overflow ov;
    std::uint32_t want;
    const char* why;
  };
  const Case cases[] = {
      {&bf16, 0x3f808000, Overflow::ieee, 0x3f80, "1 + 2^-8: tie, kept lsb even -> down"},
      {&bf16, 0x3f818000, Overflow::ieee, 0x3f82, "1 + 3*2^-8: tie, kept lsb odd -> up"},
      {&bf16, 0x00008000, Overflow::ieee, 0x0000, "fp32 subnormal tie below the least bf16 subnormal -> +0"},
      {&bf16, 0x00018000, Overflow::ieee, 0x0002, "fp32 subnormal tie, odd lsb -> up (no flush)"},
      {&bf16, 0x7f7fffff, Overflow::ieee, 0x7f80, "max fp32 rounds past bf16 max -> inf"},
      {&bf16, 0x7f7fffff, Overflow::saturate, 0x7f7f, "saturate -> bf16 max 0x1.fep127"},
      {&bf16, 0xff812345, Overflow::ieee, 0xffc0, "negative NaN -> canonical quiet NaN, sign kept"},
      {&fp16, 0x33000000, Overflow::ieee, 0x0000, "2^-25: half the least subnormal, tie to even -> 0"},
      {&fp16, 0x33000001, Overflow::ieee, 0x0001, "just above 2^-25 -> least subnormal 2^-24"},
      {&fp16, 0x477ff000, Overflow::ieee, 0x7c00, "65520: tie between 65504 and 2^16 -> inf"},
      {&fp16, 0x477fefff, Overflow::ieee, 0x7bff, "just below 65520 -> 65504"},
      {&fp8_e4m3, 0x43e80000, Overflow::ieee, 0x7e, "464: tie between 448 and 480 -> 448 (OFP8 §5)"},
      {&fp8_e4m3, 0x43f00000, Overflow::ieee, 0x7f, "480 overflows; non-saturating E4M3 -> NaN"},
      {&fp8_e4m3, 0xc3f00000, Overflow::saturate, 0xfe, "-480 saturates to -448"},
      {&fp8_e4m3, 0x7f800000, Overflow::ieee, 0x7f, "inf -> NaN (E4M3 has no inf)"},
      {&fp8_e4m3, 0xff800000, Overflow::saturate, 0xfe, "-inf saturates to -448"},
      {&fp8_e4m3, 0x3a800000, Overflow::ieee, 0x00, "2^-10: half the least subnormal 2^-9, tie to even -> 0"},
      {&fp8_e4m3, 0x3a800001, Overflow::ieee, 0x01, "just above 2^-10 -> 2^-9"},
      {&fp8_e4m3, 0x3b400000, Overflow::ieee, 0x02, "3*2^-10: tie between 2^-9 and 2^-8 -> 2^-8 (even)"},
      {&fp8_e5m2, 0x7f800000, Overflow::ieee, 0x7c, "inf -> inf"},
      {&fp8_e5m2, 0x47700000, Overflow::ieee, 0x7c, "61440: tie between 57344 and 65536 -> inf"},
      {&fp8_e5m2, 0x47700000, Overflow::saturate, 0x7b, "saturate -> 57344"},
      {&fp8_e4m3fnuz, 0x80000000, Overflow::ieee, 0x00, "-0 -> +0 (0x80 is the NaN)"},
      {&fp8_e4m3fnuz, 0xffc00000, Overflow::ieee, 0x80, "NaN -> 0x80"},
      {&fp8_e5m2fnuz, 0x7f800000, Overflow::saturate, 0x7f, "inf saturates to 57344"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(fmt::format("{} -> {}: {}", to_hex(fp32, Bits{c.in}), c.to->name, c.why));
    RoundOptions o;
    o.overflow = c.ov;
    const std::vector<std::uint32_t> in{c.in};
    for (BulkPath path : available_paths()) {
      SCOPED_TRACE(fmt::format("path {}", bulk_path_name(path)));
      EXPECT_EQ(bulk_narrow(*c.to, in, o, path)[0], c.want);
    }
  }
}

// ---------------------------------------------------------------------------------------
// Widening: every pattern of every 16- and 8-bit format.

template <typename Narrow>
void check_widen_exhaustive(const FormatSpec& from) {
  const std::size_t n = std::size_t{1} << from.bits;
  std::vector<Narrow> in(n);
  std::vector<std::uint32_t> in32(n);
  for (std::size_t i = 0; i < n; ++i) {
    in[i] = static_cast<Narrow>(i);
    in32[i] = static_cast<std::uint32_t>(i);
  }
  std::vector<RoundOptions> sets = fast_option_sets();
  RoundOptions sr;  // widening is exact: stochastic rounding must not change anything
  sr.rounding = Rounding::stochastic;
  sr.seed = 7;
  sets.push_back(sr);
  for (const RoundOptions& o : sets) {
    SCOPED_TRACE(describe(o));
    ASSERT_TRUE(bulk_is_fast(from, fp32, o));
    const std::vector<std::uint32_t> want = oracle(from, fp32, in32, o);
    for (BulkPath path : available_paths()) {
      SCOPED_TRACE(fmt::format("path {}", bulk_path_name(path)));
      std::vector<std::uint32_t> got(n);
      convert_to_fp32(from, std::span<const Narrow>(in), std::span<std::uint32_t>(got), o, path);
      std::vector<float> gotf(n);
      convert_to_fp32(from, std::span<const Narrow>(in), std::span<float>(gotf), o, path);
      Mismatches m(from, fp32);
      for (std::size_t i = 0; i < n; ++i) {
        m.check(i, in32[i], got[i], want[i]);
        m.check(i, in32[i], std::bit_cast<std::uint32_t>(gotf[i]), want[i]);
      }
    }
  }
}

TEST(Bulk, Widen16AllPatterns) {
  for (const FormatSpec* f : k16) {
    SCOPED_TRACE(f->name);
    check_widen_exhaustive<std::uint16_t>(*f);
  }
}

TEST(Bulk, Widen8AllPatterns) {
  for (const FormatSpec* f : k8) {
    SCOPED_TRACE(f->name);
    check_widen_exhaustive<std::uint8_t>(*f);
  }
}

// ---------------------------------------------------------------------------------------
// Narrowing: every fp32 exponent crossed with significand patterns at every rounding
// position (ties, tie ± 1 ulp, with odd and even kept lsb), and seeded random patterns.

std::vector<std::uint32_t> boundary_inputs() {
  std::vector<std::uint32_t> mant{0, 1, 2, 3, 0x7fffff, 0x7ffffe, 0x400000, 0x400001, 0x3fffff, 0x555555, 0x2aaaaa};
  for (int k = 0; k < 23; ++k) {  // k: position of the half-ulp bit when k + 1 bits are dropped
    const std::uint32_t tie = std::uint32_t{1} << k;
    const std::uint32_t lsb = tie << 1;
    for (std::uint32_t high : {0u, 0x7fffffu & ~(2 * lsb - 1)})  // bits above the kept lsb
      for (std::uint32_t odd : {0u, lsb})
        for (std::uint32_t low : {tie, tie | 1, tie - 1, tie | (tie - 1)})  // tie, above, below, all ones
          mant.push_back((high | odd | low) & 0x7fffff);
  }
  std::sort(mant.begin(), mant.end());
  mant.erase(std::unique(mant.begin(), mant.end()), mant.end());
  std::vector<std::uint32_t> in;
  for (std::uint32_t sign : {0u, 0x80000000u})
    for (std::uint32_t e = 0; e < 256; ++e)
      for (std::uint32_t m : mant) in.push_back(sign | (e << 23) | m);
  return in;
}

TEST(Bulk, NarrowBoundaries) {
  const std::vector<std::uint32_t> in = boundary_inputs();
  for (const RoundOptions& o : fast_option_sets()) {
    SCOPED_TRACE(describe(o));
    for (const FormatSpec* f : {&bf16, &fp16, &fp8_e4m3, &fp8_e5m2, &fp8_e4m3fnuz, &fp8_e5m2fnuz}) {
      SCOPED_TRACE(f->name);
      ASSERT_TRUE(bulk_is_fast(fp32, *f, o));
      check_narrow_all_paths(*f, in, o);
    }
  }
}

/// Random fp32 patterns: half uniform over all 2^32, half with the exponent drawn from the
/// target's range widened by its precision + 2 on either side (the rounding decisions).
std::vector<std::uint32_t> random_inputs(const FormatSpec& to, std::size_t n, std::uint64_t seed) {
  std::mt19937_64 gen(seed);
  std::vector<std::uint32_t> in(n);
  const int lo = std::max(0, emin(to) - to.precision - 2 + 127);
  const int hi = std::min(255, emax(to) + 2 + 127);
  std::uniform_int_distribution<int> exp_dist(lo, hi);
  for (std::size_t i = 0; i < n; ++i) {
    const auto bits = static_cast<std::uint32_t>(gen());
    in[i] = (i % 2 == 0) ? bits : (bits & 0x807fffffu) | (static_cast<std::uint32_t>(exp_dist(gen)) << 23);
  }
  return in;
}

TEST(Bulk, NarrowRandom) {
  // 2.5 * 10^7 patterns in all: 1.25M per format under rne/ieee and rne/saturate (the
  // common cases), 125k per format under each of the other 14 option sets (about 1 s).
  const std::uint64_t seed = 20240611;
  SCOPED_TRACE(fmt::format("seed {}", seed));
  for (const FormatSpec* f : {&bf16, &fp16, &fp8_e4m3, &fp8_e5m2, &fp8_e4m3fnuz, &fp8_e5m2fnuz}) {
    SCOPED_TRACE(f->name);
    for (const RoundOptions& o : fast_option_sets()) {
      SCOPED_TRACE(describe(o));
      const bool common = o.rounding == Rounding::rne && !o.ftz && !o.daz;
      check_narrow_all_paths(*f, random_inputs(*f, common ? 1'250'000 : 125'000, seed + f->bits), o);
    }
  }
}

// ---------------------------------------------------------------------------------------
// Loop tails and alignment: every length 0..70 at element offsets 0..17 (every 4-byte
// position in a 64-byte line, since the kernels peel elements up to a line boundary);
// guard elements around the destination must stay untouched.

TEST(Bulk, OddLengthsAndOffsets) {
  const std::vector<std::uint32_t> pool = random_inputs(fp8_e4m3, 96, 99);
  const std::vector<std::uint32_t> pool16 = [] {
    std::vector<std::uint32_t> v(96);
    for (std::size_t i = 0; i < v.size(); ++i) v[i] = static_cast<std::uint32_t>(i * 2654435761u) & 0xffff;
    return v;
  }();
  RoundOptions o;
  o.overflow = Overflow::saturate;
  for (BulkPath path : available_paths()) {
    SCOPED_TRACE(fmt::format("path {}", bulk_path_name(path)));
    for (std::size_t off = 0; off < 18; ++off) {
      for (std::size_t len = 0; len <= 70; ++len) {
        SCOPED_TRACE(fmt::format("offset {} length {}", off, len));
        const std::span<const std::uint32_t> src(pool.data() + off, len);
        // fp32 -> fp8 (1-byte output: the offset misaligns the destination too)
        std::vector<std::uint8_t> d8(len + off + 8, 0xa5);
        convert_from_fp32(fp8_e4m3, src, std::span<std::uint8_t>(d8.data() + off, len), o, path);
        // fp32 -> bf16
        std::vector<std::uint16_t> d16(len + off + 8, 0xa5a5);
        convert_from_fp32(bf16, src, std::span<std::uint16_t>(d16.data() + off, len), o, path);
        // fp16 -> fp32
        std::vector<std::uint16_t> s16(pool16.begin(), pool16.end());
        std::vector<std::uint32_t> d32(len + off + 8, 0xa5a5a5a5);
        convert_to_fp32(fp16, std::span<const std::uint16_t>(s16.data() + off, len),
                        std::span<std::uint32_t>(d32.data() + off, len), o, path);
        for (std::size_t i = 0; i < d8.size(); ++i) {
          if (i < off || i >= off + len) {
            ASSERT_EQ(d8[i], 0xa5) << "fp8 guard element " << i << " overwritten";
            ASSERT_EQ(d16[i], 0xa5a5) << "bf16 guard element " << i << " overwritten";
            ASSERT_EQ(d32[i], 0xa5a5a5a5u) << "fp32 guard element " << i << " overwritten";
            continue;
          }
          const std::uint32_t x = pool[i];
          ASSERT_EQ(d8[i], convert(fp32, fp8_e4m3, Bits{x}, o).bits.raw) << "index " << i;
          ASSERT_EQ(d16[i], convert(fp32, bf16, Bits{x}, o).bits.raw) << "index " << i;
          ASSERT_EQ(d32[i], convert(fp16, fp32, Bits{s16[i]}, o).bits.raw) << "index " << i;
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// The float overloads, the scalar fallback (stochastic and directed modes) and the API contract.

TEST(Bulk, FloatSpansMatchPatternSpans) {
  const std::vector<std::uint32_t> in = random_inputs(fp16, 1000, 5);
  std::vector<float> inf(in.size());
  std::transform(in.begin(), in.end(), inf.begin(), [](std::uint32_t x) { return std::bit_cast<float>(x); });
  for (BulkPath path : available_paths()) {
    SCOPED_TRACE(fmt::format("path {}", bulk_path_name(path)));
    std::vector<std::uint16_t> a(in.size()), b(in.size());
    convert_from_fp32(fp16, std::span<const std::uint32_t>(in), std::span<std::uint16_t>(a), {}, path);
    convert_from_fp32(fp16, std::span<const float>(inf), std::span<std::uint16_t>(b), {}, path);
    EXPECT_EQ(a, b);
    std::vector<std::uint8_t> c(in.size()), d(in.size());
    convert_from_fp32(fp8_e5m2, std::span<const std::uint32_t>(in), std::span<std::uint8_t>(c), {}, path);
    convert_from_fp32(fp8_e5m2, std::span<const float>(inf), std::span<std::uint8_t>(d), {}, path);
    EXPECT_EQ(c, d);
    std::vector<float> e(in.size());
    convert_to_fp32(fp8_e5m2, std::span<const std::uint8_t>(c), std::span<float>(e), {}, path);
    for (std::size_t i = 0; i < c.size(); ++i)
      ASSERT_EQ(std::bit_cast<std::uint32_t>(e[i]), convert(fp8_e5m2, fp32, Bits{c[i]}).bits.raw) << i;
  }
}

TEST(Bulk, FallbackModesUseElementIndexAsStream) {
  const std::vector<std::uint32_t> in = random_inputs(fp8_e4m3, 5000, 11);
  for (Rounding r : {Rounding::stochastic, Rounding::rup, Rounding::rdn, Rounding::rna}) {
    RoundOptions o;
    o.rounding = r;
    o.seed = 42;
    o.stream = 1000;  // index of the first element in a larger array
    SCOPED_TRACE(describe(o));
    EXPECT_FALSE(bulk_is_fast(fp32, fp8_e4m3, o));
    for (const FormatSpec* f : {&fp8_e4m3, &bf16}) {
      SCOPED_TRACE(f->name);
      const std::vector<std::uint32_t> want = oracle(fp32, *f, in, o);
      const std::vector<std::uint32_t> got = bulk_narrow(*f, in, o, BulkPath::automatic);
      Mismatches m(fp32, *f);
      for (std::size_t i = 0; i < in.size(); ++i) m.check(i, in[i], got[i], want[i]);
      // Two chunks with the stream offset give the bits of one call.
      RoundOptions second = o;
      second.stream = o.stream + 1234;
      const std::vector<std::uint32_t> tail =
          bulk_narrow(*f, std::span<const std::uint32_t>(in).subspan(1234), second, BulkPath::automatic);
      for (std::size_t i = 1234; i < in.size(); ++i) m.check(i, in[i], tail[i - 1234], want[i]);
    }
  }
  // Stochastic rounding is actually stochastic here: two seeds differ somewhere.
  RoundOptions a;
  a.rounding = Rounding::stochastic;
  a.seed = 1;
  RoundOptions b = a;
  b.seed = 2;
  EXPECT_NE(bulk_narrow(fp8_e4m3, in, a, BulkPath::automatic), bulk_narrow(fp8_e4m3, in, b, BulkPath::automatic));
}

TEST(Bulk, GenericPairsAndFormatsWithoutKernel) {
  std::vector<std::uint32_t> in(1 << 16);
  for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::uint32_t>(i);
  RoundOptions o;
  o.rounding = Rounding::stochastic;
  o.seed = 3;
  for (const FormatSpec* to : {&fp8_e4m3, &fp6_e2m3, &fp4_e2m1, &e8m0, &int8, &tf32}) {
    SCOPED_TRACE(to->name);
    EXPECT_FALSE(bulk_is_fast(fp16, *to, o));
    std::vector<std::uint32_t> got(in.size());
    convert_bulk(fp16, *to, in, got, o);
    const std::vector<std::uint32_t> want = oracle(fp16, *to, in, o);
    Mismatches m(fp16, *to);
    for (std::size_t i = 0; i < in.size(); ++i) m.check(i, in[i], got[i], want[i]);
  }
  // fp32 -> formats without a kernel through the narrow entry points.
  const std::vector<std::uint32_t> x = random_inputs(fp6_e3m2, 2000, 17);
  for (const FormatSpec* to : {&fp6_e3m2, &fp4_e2m1, &e8m0, &uint8}) {
    SCOPED_TRACE(to->name);
    EXPECT_FALSE(bulk_is_fast(fp32, *to, {}));
    const std::vector<std::uint32_t> got = bulk_narrow(*to, x, {}, BulkPath::automatic);
    const std::vector<std::uint32_t> want = oracle(fp32, *to, x, {});
    Mismatches m(fp32, *to);
    for (std::size_t i = 0; i < x.size(); ++i) m.check(i, x[i], got[i], want[i]);
  }
}

TEST(Bulk, ContractErrors) {
  std::vector<std::uint32_t> src(4);
  std::vector<std::uint16_t> d16(3);
  std::vector<std::uint8_t> d8(4);
  EXPECT_THROW(convert_from_fp32(bf16, std::span<const std::uint32_t>(src), std::span<std::uint16_t>(d16)),
               std::invalid_argument);
  EXPECT_THROW(convert_from_fp32(bf16, std::span<const std::uint32_t>(src), std::span<std::uint8_t>(d8)),
               std::invalid_argument);  // a 16-bit format does not fit bytes
  std::vector<std::uint32_t> d32(5);
  EXPECT_THROW(convert_bulk(fp16, fp32, src, d32), std::invalid_argument);
  for (BulkPath p : {BulkPath::avx2, BulkPath::avx512}) {
    if (bulk_path_available(p)) continue;
    std::vector<std::uint16_t> ok(4);
    EXPECT_THROW(convert_from_fp32(bf16, std::span<const std::uint32_t>(src), std::span<std::uint16_t>(ok), {}, p),
                 std::invalid_argument);
  }
  EXPECT_TRUE(bulk_path_available(BulkPath::portable));
  EXPECT_NE(bulk_best_path(), BulkPath::automatic);
}

#endif  // NUMFID_BULK_EXHAUSTIVE

}  // namespace
}  // namespace numfid
