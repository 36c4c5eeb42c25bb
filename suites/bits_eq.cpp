// EXPECT_BITS_EQ: the comparison and its message.
#include "suites/bits_eq.h"

#include <vector>

#include <fmt/format.h>

#include "io/tensor.h"
#include "suites/print.h"

namespace numfid::testing {

namespace {

::testing::AssertionResult compare(const char* ee, const char* ae, const TensorData& expected,
                                   std::span<const Bits> actual, const std::vector<std::int64_t>& shape) {
  if (actual.size() != expected.values.size())
    return ::testing::AssertionFailure() << ae << " has " << actual.size() << " elements, " << ee << " has "
                                         << expected.values.size() << " (" << shape_string(expected.shape) << ")";
  const FormatSpec& f = *expected.format;
  std::int64_t mismatches = 0;
  std::string shown;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    if (actual[i] == expected.values[i]) continue;
    if (mismatches++ < kBitsMismatchesShown)
      shown += fmt::format("    {}: expected {}\n    {}  actual   {}\n", index_string(shape, static_cast<std::int64_t>(i)),
                           describe_bits(f, expected.values[i]), std::string(index_string(shape, static_cast<std::int64_t>(i)).size(), ' '),
                           describe_bits(f, actual[i]));
  }
  if (mismatches == 0) return ::testing::AssertionSuccess();
  const double pct = 100.0 * static_cast<double>(mismatches) / static_cast<double>(actual.size());
  return ::testing::AssertionFailure() << ae << " differs from " << ee << " (" << f.name << " "
                                       << shape_string(expected.shape) << ") in " << mismatches << " of "
                                       << actual.size() << " elements (" << fmt::format("{:.3g}", pct) << "%)"
                                       << (mismatches > kBitsMismatchesShown
                                               ? fmt::format("; the first {}:", kBitsMismatchesShown)
                                               : std::string(":"))
                                       << "\n"
                                       << shown;
}

template <typename T>
::testing::AssertionResult patterns(const char* ee, const char* ae, const TensorData& expected, std::span<const T> p) {
  std::vector<Bits> bits;
  bits.reserve(p.size());
  for (const T v : p) {
    if (!fits(*expected.format, Bits{v}))
      return ::testing::AssertionFailure() << ae << " holds " << fmt::format("{:#x}", static_cast<std::uint32_t>(v))
                                           << ", not a pattern of " << expected.format->name;
    bits.push_back(Bits{v});
  }
  return compare(ee, ae, expected, bits, expected.shape);
}

}  // namespace

::testing::AssertionResult bits_eq(const char* ee, const char* ae, const TensorData& expected, const TensorData& actual) {
  if (actual.format->name != expected.format->name)
    return ::testing::AssertionFailure() << ae << " is " << actual.format->name << ", " << ee << " is "
                                         << expected.format->name;
  if (actual.shape != expected.shape)
    return ::testing::AssertionFailure() << ae << " has shape " << shape_string(actual.shape) << ", " << ee << " "
                                         << shape_string(expected.shape);
  return compare(ee, ae, expected, actual.values, expected.shape);
}

::testing::AssertionResult bits_eq(const char* ee, const char* ae, const TensorData& expected,
                                   std::span<const Bits> actual) {
  // A pattern wider than the format would print as its masked self beside an equal expected
  // value (to_hex shows the format's width): say what it holds instead.
  for (const Bits b : actual)
    if (!fits(*expected.format, b))
      return ::testing::AssertionFailure() << ae << " holds " << fmt::format("{:#x}", b.raw) << ", not a pattern of "
                                           << expected.format->name;
  return compare(ee, ae, expected, actual, expected.shape);
}
::testing::AssertionResult bits_eq(const char* ee, const char* ae, const TensorData& expected,
                                   std::span<const std::uint32_t> actual) {
  return patterns(ee, ae, expected, actual);
}
::testing::AssertionResult bits_eq(const char* ee, const char* ae, const TensorData& expected,
                                   std::span<const std::uint16_t> actual) {
  return patterns(ee, ae, expected, actual);
}
::testing::AssertionResult bits_eq(const char* ee, const char* ae, const TensorData& expected,
                                   std::span<const std::uint8_t> actual) {
  return patterns(ee, ae, expected, actual);
}

}  // namespace numfid::testing
