// Memory for the check pipeline's per-element arrays: one entry per element of an output, millions
// of entries, each array written once from end to end.
#pragma once

#include <cstddef>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

namespace numfid {

/// Bytes from which allocate_large maps its own memory and asks for transparent huge pages.
inline constexpr std::size_t kLargeAllocationBytes = std::size_t{2} << 20;

/// `bytes` of memory aligned to `alignment` (at most 4096). From kLargeAllocationBytes on, an
/// anonymous mapping aligned to 2 MiB, advised for transparent huge pages on Linux
/// (madvise(MADV_HUGEPAGE): https://www.kernel.org/doc/html/latest/admin-guide/mm/transhuge.html):
/// first touching it then costs one page fault per 2 MiB instead of one per 4 KiB, which is what
/// a check of a large output spent most of its judgement on in a virtual machine
/// (docs/performance.md, "Huge pages, and a constant that was a loop"). Where the kernel gives
/// no huge page the mapping is ordinary memory. Smaller sizes, and every size under NUMFID_HUGE_PAGES=0 (read once per
/// process): ::operator new. std::bad_alloc when nothing is to be had.
void* allocate_large(std::size_t bytes, std::size_t alignment);

/// allocate_large's memory, every byte zero: a fresh mapping as the kernel gives it (its pages
/// are touched, and cleared, by whoever first writes them: on every core where the writes are
/// spread), smaller sizes cleared here.
void* allocate_large_zeroed(std::size_t bytes, std::size_t alignment);

/// Frees memory of allocate_large or allocate_large_zeroed(bytes, alignment), given the same
/// bytes and alignment.
void deallocate_large(void* p, std::size_t bytes, std::size_t alignment) noexcept;

/// Whether T's value-initialised object is all zero bytes (padding aside), so that zeroed memory
/// holds value-initialised Ts without constructing them: arithmetic types, and the element types
/// that say so by specialising it (each with a test of its fields).
template <class T>
struct ZeroIsDefault : std::bool_constant<std::is_arithmetic_v<T>> {};

/// n value-initialised Ts in allocate_large's memory, of a size fixed when made: one entry per
/// element of an output. Where ZeroIsDefault<T>, nothing is written when it is made — zeroed
/// memory already holds the values, and its pages are first touched by whoever fills them (a
/// std::vector<T>(n) writes every byte in the calling thread first: for 4096 × 4096 exact
/// elements, 1.3 GB and 2 s on one core). Copyable and movable.
template <class T>
class LargeArray {
  static_assert(std::is_nothrow_default_constructible_v<T> && std::is_trivially_destructible_v<T> &&
                std::is_trivially_copyable_v<T>);

 public:
  LargeArray() noexcept = default;
  explicit LargeArray(std::size_t n) : n_(n), p_(make(n)) {
    if constexpr (!ZeroIsDefault<T>::value) std::uninitialized_value_construct(p_, p_ + n_);
  }
  LargeArray(const LargeArray& o) : n_(o.n_), p_(o.n_ == 0 ? nullptr : static_cast<T*>(allocate_large(bytes(o.n_), alignof(T)))) {
    if (n_ != 0) std::uninitialized_copy(o.p_, o.p_ + n_, p_);
  }
  LargeArray(LargeArray&& o) noexcept : n_(std::exchange(o.n_, 0)), p_(std::exchange(o.p_, nullptr)) {}
  LargeArray& operator=(LargeArray o) noexcept {
    std::swap(n_, o.n_);
    std::swap(p_, o.p_);
    return *this;
  }
  ~LargeArray() {
    if (p_ != nullptr) deallocate_large(p_, bytes(n_), alignof(T));
  }

  std::size_t size() const noexcept { return n_; }
  bool empty() const noexcept { return n_ == 0; }
  T& operator[](std::size_t i) noexcept { return p_[i]; }
  const T& operator[](std::size_t i) const noexcept { return p_[i]; }
  T* data() noexcept { return p_; }
  const T* data() const noexcept { return p_; }
  T* begin() noexcept { return p_; }
  T* end() noexcept { return p_ + n_; }
  const T* begin() const noexcept { return p_; }
  const T* end() const noexcept { return p_ + n_; }

 private:
  static std::size_t bytes(std::size_t n) {
    if (n > static_cast<std::size_t>(-1) / sizeof(T)) throw std::bad_array_new_length();
    return n * sizeof(T);
  }
  static T* make(std::size_t n) {
    if (n == 0) return nullptr;
    return static_cast<T*>(ZeroIsDefault<T>::value ? allocate_large_zeroed(bytes(n), alignof(T))
                                                   : allocate_large(bytes(n), alignof(T)));
  }
  std::size_t n_ = 0;
  T* p_ = nullptr;
};

}  // namespace numfid
