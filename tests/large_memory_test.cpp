// Tests of the per-element arrays' memory (tolerances/large_memory.h): sizes on both sides of
// the threshold, alignment, contents written and read back over the whole range, and a
// std::vector over the allocator that grows, copies and shrinks.
#include "tolerances/large_memory.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <numeric>

#include "tolerances/parallel_detail.h"

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

TEST(LargeMemory, VectorGrowsCopiesAndShrinks) {
  LargeVector<std::int64_t> v;
  const std::size_t n = 3 * kLargeAllocationBytes / sizeof(std::int64_t) + 17;  // crosses the threshold while growing
  for (std::size_t i = 0; i < n; ++i) v.push_back(static_cast<std::int64_t>(i) * 3 - 5);
  const LargeVector<std::int64_t> copy = v;
  ASSERT_EQ(copy.size(), n);
  for (std::size_t i = 0; i < n; i += 997) ASSERT_EQ(copy[i], static_cast<std::int64_t>(i) * 3 - 5) << i;
  EXPECT_EQ(copy.back(), static_cast<std::int64_t>(n - 1) * 3 - 5);
  v.resize(10);
  v.shrink_to_fit();
  EXPECT_EQ(std::accumulate(v.begin(), v.end(), std::int64_t{0}), 3 * 45 - 50);
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

}  // namespace
}  // namespace numfid
