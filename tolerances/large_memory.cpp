// Large per-element arrays on transparent huge pages (tolerances/large_memory.h).
#include "tolerances/large_memory.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string_view>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace numfid {

namespace {

/// The huge page size of x86-64 and of arm64 with 4 KiB pages: the mapping is aligned to it so
/// that each of its 2 MiB stretches can be one huge page.
constexpr std::size_t kHugePage = std::size_t{2} << 20;

std::size_t mapped_bytes(std::size_t bytes) { return (bytes + kHugePage - 1) / kHugePage * kHugePage; }

/// Whether large arrays get their own huge-page mappings: unless NUMFID_HUGE_PAGES=0. Read once
/// per process. The switch exists because the gain depends on the machine: a kernel whose THP
/// `defrag` setting compacts memory synchronously on a madvised fault was measured slower with
/// them on one machine and 2x faster on another (docs/performance.md, "Huge pages, and a
/// constant that was a loop").
bool huge_pages_wanted() {
  static const bool wanted = [] {
    const char* env = std::getenv("NUMFID_HUGE_PAGES");
    return env == nullptr || std::string_view(env) != "0";
  }();
  return wanted;
}

/// The size class of an allocation: its own mapping or ::operator new. allocate_large and
/// deallocate_large must agree on it for the same bytes and alignment.
bool mapped(std::size_t bytes, std::size_t alignment) {
#if defined(__linux__)
  return bytes >= kLargeAllocationBytes && alignment <= 4096 && huge_pages_wanted();
#else
  (void)bytes, (void)alignment;
  return false;
#endif
}

}  // namespace

void* allocate_large(std::size_t bytes, std::size_t alignment) {
#if defined(__linux__)
  if (mapped(bytes, alignment)) {
    const std::size_t len = mapped_bytes(bytes);
    // Map one huge page more than needed and unmap what lies outside the aligned stretch: mmap
    // itself only aligns to the base page.
    void* raw = mmap(nullptr, len + kHugePage, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (raw == MAP_FAILED) throw std::bad_alloc();
    const auto start = reinterpret_cast<std::uintptr_t>(raw);
    const std::uintptr_t aligned = (start + kHugePage - 1) / kHugePage * kHugePage;
    if (aligned > start) munmap(raw, aligned - start);
    const std::uintptr_t end = start + len + kHugePage, aligned_end = aligned + len;
    if (end > aligned_end) munmap(reinterpret_cast<void*>(aligned_end), end - aligned_end);
    void* p = reinterpret_cast<void*>(aligned);
    // Advice only: a kernel without transparent huge pages (or with them off) refuses it, and
    // the mapping stays ordinary memory.
    (void)madvise(p, len, MADV_HUGEPAGE);
    return p;
  }
#endif
  return ::operator new(bytes == 0 ? 1 : bytes, std::align_val_t{alignment});
}

void* allocate_large_zeroed(std::size_t bytes, std::size_t alignment) {
  void* p = allocate_large(bytes, alignment);
  if (!mapped(bytes, alignment)) std::memset(p, 0, bytes);  // a fresh mapping is zero already
  return p;
}

void deallocate_large(void* p, std::size_t bytes, std::size_t alignment) noexcept {
  if (p == nullptr) return;
#if defined(__linux__)
  if (mapped(bytes, alignment)) {
    munmap(p, mapped_bytes(bytes));
    return;
  }
#endif
  ::operator delete(p, std::align_val_t{alignment});
}

}  // namespace numfid
