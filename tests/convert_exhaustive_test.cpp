// Exhaustive conversion test (label `exhaustive`, not in the default suite): every one of the
// 2^32 fp32 patterns into each narrower format (fp16, bf16, tf32, the four fp8s, both fp6,
// fp4, e8m0, int8), rounding to nearest even (rne) and toward zero (rtz), both overflow
// modes, against the MPFR oracle (tests/support). One gtest per (target, mode), so that
// `ctest -L exhaustive -j N` spreads them over N cores.
//
// Cost: about 11 CPU-minutes per (target, mode) in a Release build, 4.4 CPU-hours for all 24
// (extrapolated from slices: every 257th pattern of all 24 took 61 CPU-s, every 4099th 4.1).
// NUMFID_EXHAUSTIVE_STRIDE=k checks every k-th pattern only (a quick slice; default 1 = all).
#include "formats/convert.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <tuple>

#include <fmt/format.h>

#include "tests/support/mpfr_oracle.h"
#include "tests/support/naive_codec.h"
#include "tests/support/sweep.h"

namespace numfid {
namespace {

using test::NanPolicy;
using test::Sweep;

std::uint64_t stride() {
  const char* s = std::getenv("NUMFID_EXHAUSTIVE_STRIDE");
  const long long k = s != nullptr ? std::atoll(s) : 1;
  return k > 0 ? static_cast<std::uint64_t>(k) : 1;
}

using Param = std::tuple<const FormatSpec*, Rounding>;

class ConvertFp32Exhaustive : public ::testing::TestWithParam<Param> {};

TEST_P(ConvertFp32Exhaustive, EveryPattern) {
  const FormatSpec& to = *std::get<0>(GetParam());
  const Rounding r = std::get<1>(GetParam());
  const std::uint64_t step = stride();
  Sweep sweep(fmt::format("fp32 -> {} {} (every {} pattern(s))", to.name, rounding_name(r), step));
  const auto start = std::chrono::steady_clock::now();
  for (std::uint64_t raw = 0; raw <= 0xffffffffull; raw += step) {
    const Bits x{static_cast<std::uint32_t>(raw)};
    const test::Rounded rd = test::oracle_round_value(to, test::naive_decode(fp32, x), r);
    for (const Overflow ovf : {Overflow::ieee, Overflow::saturate}) {
      const RoundOptions o{r, ovf, false, false, 0, 0};
      sweep.check(to, test::oracle_finish(to, rd, o), convert(fp32, to, x, o), test::checked_flags(to, rd),
                  NanPolicy::same_sign, [&] {
                    return fmt::format("fp32 -> {} {} of {}", to.name, test::options_name(o), test::show(fp32, x));
                  });
    }
  }
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::printf("fp32 -> %s %s: %lld cases in %.1f s\n", std::string(to.name).c_str(),
              std::string(rounding_name(r)).c_str(), static_cast<long long>(sweep.cases()), seconds);
}

std::string param_name(const ::testing::TestParamInfo<Param>& p) {
  return fmt::format("{}_{}", std::get<0>(p.param)->name, rounding_name(std::get<1>(p.param)));
}

INSTANTIATE_TEST_SUITE_P(Formats, ConvertFp32Exhaustive,
                         ::testing::Combine(::testing::Values(&fp16, &bf16, &tf32, &fp8_e4m3, &fp8_e5m2, &fp8_e4m3fnuz,
                                                              &fp8_e5m2fnuz, &fp6_e3m2, &fp6_e2m3, &fp4_e2m1, &e8m0,
                                                              &int8),
                                            ::testing::Values(Rounding::rne, Rounding::rtz)),
                         param_name);

}  // namespace
}  // namespace numfid
