// EXPECT_BITS_EQ: bit-exact equality of an output with an expected tensor (typically the output
// an emulated platform predicts: numfid::emulate_matmul), with the mismatches printed as hex and
// decoded sign/exponent/significand fields. NaN-equivalence: none (bits are compared as bits).
#pragma once

#include <cstdint>
#include <span>

#include <gtest/gtest.h>

#include "tolerances/check.h"

namespace numfid::testing {

/// Mismatches listed in a failure message (the count is always complete).
inline constexpr int kBitsMismatchesShown = 8;

/// Predicate-formatters of EXPECT_BITS_EQ: `actual` as a tensor (formats and shapes must agree)
/// or as patterns of the expected tensor's format (counts must agree).
::testing::AssertionResult bits_eq(const char* expected_expr, const char* actual_expr, const TensorData& expected,
                                   const TensorData& actual);
::testing::AssertionResult bits_eq(const char* expected_expr, const char* actual_expr, const TensorData& expected,
                                   std::span<const Bits> actual);
::testing::AssertionResult bits_eq(const char* expected_expr, const char* actual_expr, const TensorData& expected,
                                   std::span<const std::uint32_t> actual);
::testing::AssertionResult bits_eq(const char* expected_expr, const char* actual_expr, const TensorData& expected,
                                   std::span<const std::uint16_t> actual);
::testing::AssertionResult bits_eq(const char* expected_expr, const char* actual_expr, const TensorData& expected,
                                   std::span<const std::uint8_t> actual);

}  // namespace numfid::testing

/// Expects `actual` (TensorData, or a span/vector of Bits, uint32_t, uint16_t or uint8_t
/// patterns of expected's format) to equal `expected` (TensorData) bit for bit.
#define EXPECT_BITS_EQ(expected, actual) EXPECT_PRED_FORMAT2(::numfid::testing::bits_eq, expected, actual)
#define ASSERT_BITS_EQ(expected, actual) ASSERT_PRED_FORMAT2(::numfid::testing::bits_eq, expected, actual)
