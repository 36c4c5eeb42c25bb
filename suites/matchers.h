// gMock matchers over check results: EXPECT_THAT(numfid::check_matmul(...), IsConsistent()),
// IsDefect(), HasSignature("bias"); they explain themselves through the result listener
// (googletest docs/gmock_cook_book.md, "Writing New Polymorphic Matchers").
#pragma once

#include <ostream>
#include <string>

#include <gmock/gmock.h>

#include "suites/assertions.h"

namespace numfid::testing {

namespace detail {

inline const CheckResult& result_of(const CheckResult& r) { return r; }
inline const CheckResult& result_of(const Checked& c) { return c.result; }

/// Matches a CheckResult (or Checked) whose verdict is (or is not) a defect.
class VerdictMatcher {
 public:
  using is_gtest_matcher = void;
  explicit VerdictMatcher(bool defect) : defect_(defect) {}

  template <typename R>
  bool MatchAndExplain(const R& value, ::testing::MatchResultListener* listener) const {
    const CheckResult& r = result_of(value);
    const bool ok = (r.verdict.kind == TensorKind::defect) == defect_;
    if (listener->IsInterested()) *listener << "\n" << explain(r);
    return ok;
  }
  void DescribeTo(std::ostream* os) const {
    *os << (defect_ ? "is a numfid DEFECT" : "is numfid-consistent (consistent or suspicious, not a defect)");
  }
  void DescribeNegationTo(std::ostream* os) const {
    *os << (defect_ ? "is not a numfid DEFECT" : "is a numfid DEFECT");
  }

 private:
  bool defect_;
};

/// Matches a CheckResult (or Checked) whose verdict carries the signature `name`.
class SignatureMatcher {
 public:
  using is_gtest_matcher = void;
  explicit SignatureMatcher(std::string name) : name_(std::move(name)) {}

  template <typename R>
  bool MatchAndExplain(const R& value, ::testing::MatchResultListener* listener) const {
    const CheckResult& r = result_of(value);
    // A misspelt name ("narrow_accumulator") would never match, and Not(HasSignature(...))
    // would pass whatever the verdict says: fail instead (both ways, with the valid names).
    if (!is_signature_name(name_)) {
      // gMock calls a matcher twice when it fails (to match, then to explain): one failure.
      if (!reported_) {
        std::string valid;
        for (const std::string_view n : signature_names) valid.append(valid.empty() ? "" : ", ").append(n);
        ADD_FAILURE() << "HasSignature(\"" << name_ << "\"): not a numfid signature (numfid::signature_names: " << valid
                      << "; a reference's, reference-NAME)";
      }
      reported_ = true;
      *listener << "\"" << name_ << "\" is not a numfid signature";
      return false;
    }
    std::string names;
    for (const Signature& s : r.verdict.signatures) {
      if (s.name == name_) {
        *listener << "signature " << s.name << ": " << s.evidence;
        return true;
      }
      if (!names.empty()) names.append(", ");
      names.append(s.name);
    }
    *listener << "signatures: " << (names.empty() ? "none" : names) << "\n" << explain(r);
    return false;
  }
  void DescribeTo(std::ostream* os) const { *os << "has the numfid signature \"" << name_ << "\""; }
  void DescribeNegationTo(std::ostream* os) const { *os << "has no numfid signature \"" << name_ << "\""; }

 private:
  std::string name_;
  mutable bool reported_ = false;  ///< the invalid name's failure was added (by this copy)
};

}  // namespace detail

/// Matchers of a CheckResult or a Checked.
/// The verdict is not a defect (the CLI's exit code 0: consistent, or suspicious).
inline detail::VerdictMatcher IsConsistent() { return detail::VerdictMatcher(false); }
/// The verdict is a provable defect.
inline detail::VerdictMatcher IsDefect() { return detail::VerdictMatcher(true); }
/// The verdict's evidence includes signature `name` (bias, narrow-accumulator, confined,
/// lone-outlier, non-finite).
inline detail::SignatureMatcher HasSignature(std::string name) {
  return detail::SignatureMatcher(std::move(name));
}

}  // namespace numfid::testing
