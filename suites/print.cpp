// PrintTo for numfid's value types and the decoded form of a bit pattern.
#include "suites/print.h"

#include "suites/assertions.h"

#include <fmt/format.h>

#include "io/tensor.h"

namespace numfid {

void PrintTo(Bits b, std::ostream* os) { *os << fmt::format("Bits{{{:#x}}}", b.raw); }

void PrintTo(const FormatSpec& f, std::ostream* os) { *os << f.name; }

void PrintTo(const TensorData& t, std::ostream* os) {
  *os << fmt::format("TensorData '{}' {} {}", t.name, t.format->name, shape_string(t.shape));
}

void PrintTo(const CheckResult& r, std::ostream* os) {
  *os << fmt::format("CheckResult {}: {} — {}", r.op, r.verdict_label(), r.verdict.reason);
}

void PrintTo(const ClaimSpec& c, std::ostream* os) {
  std::string t = c.text();
  if (!t.empty() && t.front() == ' ') t.erase(0, 1);
  *os << "ClaimSpec{" << t << "}";
}

namespace testing {

void PrintTo(const Checked& c, std::ostream* os) {
  numfid::PrintTo(c.result, os);
  *os << " (numfid " << c.command << ":";
  for (const auto& [option, t] : c.operands) *os << " " << option << " " << t.format->name << " " << shape_string(t.shape);
  *os << ")";
}

std::string describe_bits(const FormatSpec& f, Bits b) {
  const std::string hex = to_hex(f, b);
  if (f.kind == FormatKind::integer) return fmt::format("{} ({:g})", hex, to_double(f, b));
  const int mbits = mantissa_bits(f);
  const std::uint32_t significand = b.raw & static_cast<std::uint32_t>((std::uint64_t{1} << mbits) - 1);
  const std::uint32_t exponent = (b.raw >> mbits) & static_cast<std::uint32_t>((std::uint64_t{1} << f.exponent_bits) - 1);
  const std::string sign = f.has_sign ? fmt::format("sign {}, ", (b.raw >> (f.bits - 1)) & 1u) : std::string();
  return fmt::format("{} ({:+.9g}: {}exponent {:#x}, significand {:#x})", hex, to_double(f, b), sign, exponent,
                     significand);
}

}  // namespace testing
}  // namespace numfid
