// The check pipeline's own threads (internal; not installed): a parallel loop over independent items (elements, rows,
// tiles), so that `numfid check` uses every core. Each item's result depends on the item only,
// never on which thread computed it or in which order, so results are identical for any
// thread count (tests/reference_fast_test.cpp checks 1, 2 and 7 threads).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <new>
#include <type_traits>
#include <vector>

#include "tolerances/large_memory.h"

namespace numfid::detail {

/// Threads the pipeline's loops use: the testing override if set, else the environment
/// variable NUMFID_THREADS (a positive integer), else std::thread::hardware_concurrency().
int check_threads();

/// Testing hook: n >= 1 makes check_threads() return n; 0 restores the default.
void set_check_threads(int n);

/// Calls fn(begin, end) on contiguous chunks of [0, n) of `grain` items (the last may be
/// shorter), on up to check_threads() threads including the calling one; chunks are taken in
/// order from a shared counter. Each thread holds an FpEnvGuard (formats/platform.h). If fn
/// throws, the remaining chunks are skipped and the first exception is rethrown after every
/// thread has stopped.
void parallel_for(std::int64_t n, std::int64_t grain, const std::function<void(std::int64_t, std::int64_t)>& fn);

/// The items fn(begin, end, out) appends for each chunk of [0, n), each chunk's sorted by
/// `less` on the thread that collected them, then visited in the order of `less` (visit(item),
/// a k-way merge of the chunks on the calling thread: no copy of the items is made). `less`
/// must be a strict total order on the items' values (items it cannot tell apart are equal in
/// every field): the visits are then those of the one sorted sequence of the items, whatever
/// the thread count.
template <class T, class Fn, class Less, class Visit>
void parallel_collect_in_order(std::int64_t n, std::int64_t grain, Fn fn, Less less, Visit visit) {
  if (n <= 0) return;
  grain = grain < 1 ? 1 : grain;
  std::vector<std::vector<T>> parts(static_cast<std::size_t>((n + grain - 1) / grain));
  parallel_for(n, grain, [&](std::int64_t i0, std::int64_t i1) {
    std::vector<T>& part = parts[static_cast<std::size_t>(i0 / grain)];
    part.reserve(static_cast<std::size_t>(i1 - i0));
    fn(i0, i1, part);
    std::sort(part.begin(), part.end(), less);
  });
  // A heap of the chunks by their next item, least on top.
  std::vector<std::size_t> next(parts.size(), 0), heap;
  const auto later = [&](std::size_t a, std::size_t b) { return less(parts[b][next[b]], parts[a][next[a]]); };
  for (std::size_t c = 0; c < parts.size(); ++c)
    if (!parts[c].empty()) heap.push_back(c);
  std::make_heap(heap.begin(), heap.end(), later);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), later);
    const std::size_t c = heap.back();
    visit(parts[c][next[c]]);
    if (++next[c] < parts[c].size()) {
      std::push_heap(heap.begin(), heap.end(), later);
    } else {
      heap.pop_back();
      std::vector<T>().swap(parts[c]);
    }
  }
}

/// fn(begin, end, part) over each chunk of [0, n) into its own value-initialised T, then the
/// parts merged into the first in chunk order (merge(into, part)): the same result for any
/// thread count, since chunks have fixed bounds (a floating-point sum is summed chunk by chunk
/// in one fixed order; within one chunk, n <= grain, it is the serial loop's).
template <class T, class Fn, class Merge>
T parallel_reduce(std::int64_t n, std::int64_t grain, Fn fn, Merge merge) {
  if (n <= 0) return T{};
  grain = grain < 1 ? 1 : grain;
  std::vector<T> parts(static_cast<std::size_t>((n + grain - 1) / grain));
  parallel_for(n, grain, [&](std::int64_t i0, std::int64_t i1) { fn(i0, i1, parts[static_cast<std::size_t>(i0 / grain)]); });
  T total = std::move(parts.front());
  for (std::size_t c = 1; c < parts.size(); ++c) merge(total, parts[c]);
  return total;
}

/// n value-initialised T whose memory is first touched by parallel_for's threads, each chunk
/// constructing its own elements. A std::vector<T>(n) zeroes all of it in the calling thread
/// first: at 4096 × 4096 outputs that is gigabytes of page faults and kernel page clearing on one
/// core (docs/performance.md, "check matmul at model scale"), before any element is computed.
template <class T>
class ParallelArray {
  static_assert(std::is_nothrow_default_constructible_v<T> && std::is_trivially_destructible_v<T>);

 public:
  explicit ParallelArray(std::int64_t n)
      : n_(static_cast<std::size_t>(n)),
        p_(static_cast<T*>(ZeroIsDefault<T>::value ? allocate_large_zeroed(sizeof(T) * (n_ == 0 ? 1 : n_), alignof(T))
                                                   : allocate_large(sizeof(T) * (n_ == 0 ? 1 : n_), alignof(T)))) {
    // Zeroed memory already holds value-initialised Ts where ZeroIsDefault: its pages are
    // first touched by the loop that fills them, on every core.
    if constexpr (!ZeroIsDefault<T>::value)
      parallel_for(n, 16384, [this](std::int64_t i0, std::int64_t i1) {
        std::uninitialized_value_construct(p_ + i0, p_ + i1);
      });
  }
  ~ParallelArray() { deallocate_large(p_, sizeof(T) * (n_ == 0 ? 1 : n_), alignof(T)); }
  ParallelArray(const ParallelArray&) = delete;
  ParallelArray& operator=(const ParallelArray&) = delete;

  T& operator[](std::size_t i) { return p_[i]; }
  const T& operator[](std::size_t i) const { return p_[i]; }
  std::size_t size() const { return n_; }
  T* begin() { return p_; }
  T* end() { return p_ + n_; }
  const T* begin() const { return p_; }
  const T* end() const { return p_ + n_; }
  T* data() { return p_; }
  const T* data() const { return p_; }

 private:
  std::size_t n_;
  T* p_;
};

}  // namespace numfid::detail
