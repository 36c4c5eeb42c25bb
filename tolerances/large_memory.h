// Memory for the check pipeline's per-element arrays: one entry per element of an output, millions
// of entries, each array written once from end to end.
#pragma once

#include <cstddef>
#include <new>
#include <vector>

namespace numfid {

/// Bytes from which allocate_large maps its own memory and asks for transparent huge pages.
inline constexpr std::size_t kLargeAllocationBytes = std::size_t{2} << 20;

/// `bytes` of memory aligned to `alignment` (at most 4096). From kLargeAllocationBytes on, an
/// anonymous mapping aligned to 2 MiB, advised for transparent huge pages on Linux
/// (madvise(MADV_HUGEPAGE): https://www.kernel.org/doc/html/latest/admin-guide/mm/transhuge.html):
/// first touching it then costs one page fault per 2 MiB instead of one per 4 KiB, which is what
/// a check of a large output spent most of its judgement on in a virtual machine
/// (docs/performance.md, "Huge pages"). Where the kernel gives no huge page the mapping is
/// ordinary memory. Smaller sizes, and every size under NUMFID_HUGE_PAGES=0 (read once per
/// process): ::operator new. std::bad_alloc when nothing is to be had.
void* allocate_large(std::size_t bytes, std::size_t alignment);

/// Frees memory of allocate_large(bytes, alignment), given the same bytes and alignment.
void deallocate_large(void* p, std::size_t bytes, std::size_t alignment) noexcept;

/// A standard allocator over allocate_large: a std::vector of it (LargeVector) is a
/// std::vector whose large buffers come from huge pages.
template <class T>
struct LargeAllocator {
  using value_type = T;
  LargeAllocator() noexcept = default;
  template <class U>
  LargeAllocator(const LargeAllocator<U>&) noexcept {}  // NOLINT: converting, as std::allocator's
  T* allocate(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    return static_cast<T*>(allocate_large(n * sizeof(T), alignof(T)));
  }
  void deallocate(T* p, std::size_t n) noexcept { deallocate_large(p, n * sizeof(T), alignof(T)); }
  template <class U>
  bool operator==(const LargeAllocator<U>&) const noexcept {
    return true;
  }
};

/// A std::vector over LargeAllocator.
template <class T>
using LargeVector = std::vector<T, LargeAllocator<T>>;

}  // namespace numfid
