// Sweep bookkeeping for the oracle tests: compares numfid's result with the oracle's,
// reports the first few mismatches in full (hex bits, decoded values, flags) and counts
// the rest, so that a broken rule fails loudly but readably.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <utility>

#include <fmt/format.h>

#include "formats/value.h"
#include "tests/support/mpfr_oracle.h"
#include "tests/support/naive_codec.h"

namespace numfid::test {

/// Counts the cases and mismatches of one sweep; ADD_FAILURE for the first `max_reported`.
class Sweep {
 public:
  explicit Sweep(std::string what, int max_reported = 10) : what_(std::move(what)), max_reported_(max_reported) {}
  Sweep(const Sweep&) = delete;
  Sweep& operator=(const Sweep&) = delete;
  ~Sweep() {
    if (failures_ > max_reported_)
      ADD_FAILURE() << what_ << ": " << failures_ << " mismatches in " << cases_ << " cases (first " << max_reported_
                    << " shown)";
  }

  /// Compares bits (under `nan`) and the flags in `flag_mask`. `context` is called only
  /// on a reported failure and should name the operation and its operands.
  template <class Context>
  bool check(const FormatSpec& f, const Result& expected, const Result& actual, Status flag_mask, NanPolicy nan,
             Context&& context) {
    ++cases_;
    const bool bits_ok = same_bits(f, expected.bits, actual.bits, nan);
    const bool flags_ok = (expected.status & flag_mask) == (actual.status & flag_mask);
    if (bits_ok && flags_ok) return true;
    if (++failures_ <= max_reported_) {
      ADD_FAILURE() << what_ << ": " << context() << "\n  expected " << show(f, expected.bits) << " flags "
                    << flag_names(expected.status) << "\n  numfid   " << show(f, actual.bits) << " flags "
                    << flag_names(actual.status) << "\n  compared flags " << flag_names(flag_mask)
                    << (bits_ok ? " (bits agree)" : "");
    }
    return false;
  }

  std::int64_t cases() const { return cases_; }
  std::int64_t failures() const { return failures_; }

 private:
  std::string what_;
  int max_reported_;
  std::int64_t cases_ = 0;
  std::int64_t failures_ = 0;
};

/// "rne/ieee", "rtz/saturate+ftz+daz" — the options of a case, for messages.
inline std::string options_name(const RoundOptions& o) {
  return fmt::format("{}/{}{}{}", rounding_name(o.rounding), o.overflow == Overflow::ieee ? "ieee" : "saturate",
                     o.ftz ? "+ftz" : "", o.daz ? "+daz" : "");
}

/// Test-name suffix of a format-parameterised test (INSTANTIATE_TEST_SUITE_P).
inline std::string format_param_name(const ::testing::TestParamInfo<const FormatSpec*>& p) {
  return std::string(p.param->name);
}

}  // namespace numfid::test
