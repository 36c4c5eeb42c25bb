// EXPECT_NUMFID_DETERMINISTIC: the same inputs twice give identical bits. A kernel that is not
// deterministic by design (atomics, split-K with a racy order) is declared so by not using it.
#pragma once

#include <cstring>
#include <type_traits>
#include <vector>

#include <gtest/gtest.h>

#include "suites/bits_eq.h"

namespace numfid::testing {

namespace detail {

inline ::testing::AssertionResult same_runs(const char* expr, const TensorData& first, const TensorData& second) {
  ::testing::AssertionResult r = bits_eq("the first run", "the second run", first, second);
  if (r) return r;
  return ::testing::AssertionFailure() << expr << " is not deterministic: " << r.message();
}

template <typename T>
  requires(std::is_trivially_copyable_v<T>)
::testing::AssertionResult same_runs(const char* expr, const std::vector<T>& first, const std::vector<T>& second) {
  if (first.size() != second.size())
    return ::testing::AssertionFailure() << expr << " is not deterministic: the first run gave " << first.size()
                                         << " elements, the second " << second.size();
  std::size_t differ = 0, first_index = 0;
  for (std::size_t i = 0; i < first.size(); ++i)
    if (std::memcmp(&first[i], &second[i], sizeof(T)) != 0 && differ++ == 0) first_index = i;
  if (differ == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << expr << " is not deterministic: " << differ << " of " << first.size()
                                       << " elements differ in their bits between two runs, the first at index "
                                       << first_index;
}

}  // namespace detail

/// Predicate-formatter of EXPECT_NUMFID_DETERMINISTIC: calls `f` twice and compares the bits of
/// what it returns (a TensorData, or a std::vector of a trivially copyable type).
template <typename F>
::testing::AssertionResult deterministic(const char* expr, F&& f) {
  const auto first = f();
  const auto second = f();
  return detail::same_runs(expr, first, second);
}

}  // namespace numfid::testing

/// Expects `callable()` to return the same bits when called twice on the same inputs.
#define EXPECT_NUMFID_DETERMINISTIC(callable) EXPECT_PRED_FORMAT1(::numfid::testing::deterministic, callable)
