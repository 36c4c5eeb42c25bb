// Cast conformance: every value of a <= 16-bit source format (or, from fp32, every value of the
// destination with its rounding neighbourhood) through the kernel's cast, compared bit for bit
// with formats/ convert():
//
//   numfid::TensorData my_cast(const numfid::TensorData& x);   // fp32 in, bf16 out
//   NUMFID_CAST_CONFORMANCE(MyCast, my_cast, "fp32", "bf16");
//   NUMFID_CAST_CONFORMANCE(MySatCast, my_sat_cast, "bf16", "fp8_e4m3", .saturate = true);
//
// No mutants here: a bitwise comparison sees every changed bit; what could make the suite blind
// is coverage, and the cases together visit every source pattern (asserted in
// tests/suites_conformance_test.cpp).
#pragma once

#include <cstdint>
#include <functional>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

#include "suites/conformance.h"

namespace numfid::testing {

/// Options of the cast suite.
struct CastSuiteOptions {
  Rounding rounding = Rounding::rne;
  bool saturate = false;   ///< overflow saturates to ±max finite (OCP OFP8 saturating mode)
  bool ftz = false;        ///< subnormal results flushed to ±0
  bool daz = false;        ///< subnormal inputs read as ±0
  bool any_nan = true;     ///< NaN-equivalence policy: any NaN matches any NaN (else bits)
  int chunks = 16;         ///< cases per cast (sharding unit)
  std::uint64_t seed = kDefaultSeed;  ///< the random points of the fp32 neighbourhoods
};

/// One case: a slice of the inputs.
struct CastCase {
  std::string name;  ///< "fp32_to_bf16_3_of_16"
  std::string from, to;
  int chunk = 0, chunks = 1;
  CastSuiteOptions options;
};
void PrintTo(const CastCase& c, std::ostream* os);

std::vector<CastCase> cast_cases(std::string_view from, std::string_view to, const CastSuiteOptions& o);
std::string cast_case_name(const ::testing::TestParamInfo<CastCase>& info);

/// The inputs of a case (format `from`, shape {count}): all patterns of a <= 16-bit source in
/// the chunk; from a wider source (fp32), for each destination pattern of the chunk its value,
/// the midpoint to its upper neighbour and the source values on either side of it, and a
/// random point between them.
TensorData cast_input(const CastCase& c);
/// What convert() gives for them.
TensorData cast_expected(const CastCase& c, const TensorData& input);

/// The kernel under test: x in `from` -> y in `to`, same shape.
using CastKernel = std::function<TensorData(const TensorData& x)>;
void run_cast_case(const CastKernel& kernel, const CastCase& c);

}  // namespace numfid::testing

/// A cast conformance suite; options: CastSuiteOptions' designated initialisers.
#define NUMFID_CAST_CONFORMANCE(Suite, adapter, from, to, ...)                                                       \
  class Suite : public ::testing::TestWithParam<::numfid::testing::CastCase> {};                                     \
  TEST_P(Suite, Conforms) { ::numfid::testing::run_cast_case(adapter, GetParam()); }                                   \
  INSTANTIATE_TEST_SUITE_P(                                                                                          \
      Numfid, Suite,                                                                                                 \
      ::testing::ValuesIn(::numfid::testing::cast_cases(from, to, ::numfid::testing::CastSuiteOptions{__VA_ARGS__})), \
      ::numfid::testing::cast_case_name)
