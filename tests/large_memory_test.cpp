// Tests of the per-element arrays' memory (tolerances/large_memory.h): sizes on both sides of
// the threshold, alignment, contents written and read back over the whole range, the arrays
// made of it, and the element types whose zero bytes are their default.
#include "tolerances/large_memory.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#include "tolerances/check.h"
#include "tolerances/judged_detail.h"
#include "tolerances/parallel_detail.h"
#include "tolerances/verdict.h"

namespace numfid {
namespace {

TEST(LargeMemory, EverySizeIsUsableAndAligned) {
  for (const std::size_t bytes : {std::size_t{1}, std::size_t{4096}, kLargeAllocationBytes - 1, kLargeAllocationBytes,
                                  kLargeAllocationBytes + 1, 3 * kLargeAllocationBytes + 12345}) {
    for (const std::size_t align : {std::size_t{8}, std::size_t{64}, std::size_t{4096}}) {
      SCOPED_TRACE(testing::Message() << bytes << " bytes, alignment " << align);
      auto* p = static_cast<unsigned char*>(allocate_large(bytes, align));
      ASSERT_NE(p, nullptr);
      EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % align, 0u);
#if defined(__linux__)
      // A mapping of its own: aligned to the 2 MiB a huge page needs (unless switched off).
      const char* env = std::getenv("NUMFID_HUGE_PAGES");
      if (bytes >= kLargeAllocationBytes && !(env != nullptr && std::string_view(env) == "0")) {
        EXPECT_EQ(reinterpret_cast<std::uintptr_t>(p) % (std::size_t{2} << 20), 0u);
      }
#endif
      // Every byte is writable and keeps what is written (first and last page included).
      for (std::size_t i = 0; i < bytes; i += 4093) p[i] = static_cast<unsigned char>(i * 7);
      p[bytes - 1] = 0xa5;
      for (std::size_t i = 0; i + 1 < bytes; i += 4093) ASSERT_EQ(p[i], static_cast<unsigned char>(i * 7)) << i;
      EXPECT_EQ(p[bytes - 1], 0xa5);
      deallocate_large(p, bytes, align);
    }
  }
}

TEST(LargeMemory, ParallelArrayIsValueInitialisedOnEveryCore) {
  struct Record {
    double x = 1.5;
    std::int32_t n = 7;
  };
  const std::int64_t n = 3 * static_cast<std::int64_t>(kLargeAllocationBytes / sizeof(Record)) + 5;
  detail::ParallelArray<Record> a(n);
  ASSERT_EQ(a.size(), static_cast<std::size_t>(n));
  for (std::size_t i = 0; i < a.size(); i += 101) ASSERT_TRUE(a[i].x == 1.5 && a[i].n == 7) << i;
  EXPECT_TRUE(a[a.size() - 1].x == 1.5 && a[a.size() - 1].n == 7);
}

/// A T made of zero bytes (what zeroed memory holds where ZeroIsDefault<T> skips construction).
template <class T>
T from_zero_bytes() {
  static_assert(std::is_trivially_copyable_v<T>);
  alignas(T) unsigned char zeros[sizeof(T)] = {};
  T t;
  std::memcpy(static_cast<void*>(&t), zeros, sizeof(T));
  return t;
}

// The element types that declare ZeroIsDefault: every field of zero bytes equals the field of a
// value-initialised object (a new field with a non-zero default would fail here).
TEST(LargeMemory, ZeroBytesAreTheDefaultExactElement) {
  const ExactElement z = from_zero_bytes<ExactElement>(), d{};
  EXPECT_EQ(z.residual, d.residual);
  EXPECT_EQ(z.infinite, d.infinite);
  EXPECT_EQ(z.nan, d.nan);
  EXPECT_EQ(z.invalid, d.invalid);
  EXPECT_EQ(std::bit_cast<std::uint64_t>(z.exact), std::bit_cast<std::uint64_t>(d.exact));
  EXPECT_EQ(std::bit_cast<std::uint64_t>(z.sum_abs), std::bit_cast<std::uint64_t>(d.sum_abs));
  EXPECT_EQ(std::bit_cast<std::uint32_t>(z.opposite), std::bit_cast<std::uint32_t>(d.opposite));
  static_assert(sizeof(ExactElement) == 24, "a field was added: test it here");
}

TEST(LargeMemory, ZeroBytesAreTheDefaultElementReport) {
  const ElementReport z = from_zero_bytes<ElementReport>(), d{};
  EXPECT_EQ(z.index, d.index);
  EXPECT_EQ(z.row, d.row);
  EXPECT_EQ(z.col, d.col);
  EXPECT_EQ(z.bits, d.bits);
  for (const auto field : {&ElementReport::value, &ElementReport::exact, &ElementReport::error, &ElementReport::error_ulps,
                           &ElementReport::det_bound, &ElementReport::prob_bound, &ElementReport::ratio})
    EXPECT_EQ(std::bit_cast<std::uint64_t>(z.*field), std::bit_cast<std::uint64_t>(d.*field));
  EXPECT_EQ(z.cls, d.cls);
  static_assert(sizeof(ElementReport) == 96, "a field was added: test it here");
}

TEST(LargeMemory, ZeroBytesAreTheDefaultJudgedElement) {
  const detail::JudgedElement z = from_zero_bytes<detail::JudgedElement>(), d{};
  for (const auto field : {&detail::JudgedElement::error, &detail::JudgedElement::error_ulps,
                           &detail::JudgedElement::det_bound, &detail::JudgedElement::prob_bound})
    EXPECT_EQ(std::bit_cast<std::uint64_t>(z.*field), std::bit_cast<std::uint64_t>(d.*field));
  EXPECT_EQ(z.cls, d.cls);
  static_assert(sizeof(detail::JudgedElement) == 40, "a field was added: test it here");
}

TEST(LargeMemory, ArrayIsValueInitialisedCopiedAndMoved) {
  const std::size_t n = kLargeAllocationBytes / sizeof(ExactElement) + 3;  // a mapping of its own
  LargeArray<ExactElement> a(n);
  ASSERT_EQ(a.size(), n);
  for (std::size_t i = 0; i < n; i += 97) ASSERT_TRUE(a[i].exact == 0 && a[i].sum_abs == 0 && !a[i].nan) << i;
  for (std::size_t i = 0; i < n; ++i) a[i].exact = static_cast<double>(i);
  LargeArray<ExactElement> b = a;  // a copy
  a[5].exact = -1;
  EXPECT_EQ(b[5].exact, 5.0);
  EXPECT_EQ(b[n - 1].exact, static_cast<double>(n - 1));
  LargeArray<ExactElement> c = std::move(b);
  EXPECT_TRUE(b.empty());
  EXPECT_EQ(c.size(), n);
  EXPECT_EQ(c[7].exact, 7.0);
  c = LargeArray<ExactElement>(3);  // a small one: ::operator new, zeroed here
  EXPECT_EQ(c.size(), 3u);
  EXPECT_TRUE(c[2].exact == 0 && c[2].infinite == 0);
  // Reused memory: a small array made after others were freed is still value-initialised.
  for (int round = 0; round < 3; ++round) {
    LargeArray<double> x(1000);
    for (std::size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], 0.0) << round << ", " << i;
    for (double& v : x) v = 42;
  }
}

}  // namespace
}  // namespace numfid
