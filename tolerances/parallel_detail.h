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

/// The items fn(begin, end, out) appends for each chunk of [0, n), reduced in the order of
/// `less`, on every core: each chunk's items are sorted on the thread that collected them; the
/// range of `key` is cut into at most 256 buckets at splitters read at fixed places of the items
/// (in chunk order); each bucket's items are visited in order (a k-way merge of the chunks'
/// parts of it, no copy made) into an `Acc` of its own — acc.add(item) for each, then
/// acc.finish() — and the buckets' Accs are merged in bucket order (merge(into, next)). `less`
/// must order by key first (key(x) < key(y) implies less(x, y)) and be a strict total order on
/// the items' values (items it cannot tell apart are equal in every field): the result is then
/// the same for any thread count, and items of one key are visited by one Acc, one after
/// another.
template <class Acc, class T, class Fn, class Less, class Key, class Merge>
Acc parallel_collect_ordered(std::int64_t n, std::int64_t grain, Fn fn, Less less, Key key, Merge merge) {
  if (n <= 0) return Acc{};
  grain = grain < 1 ? 1 : grain;
  std::vector<std::vector<T>> parts(static_cast<std::size_t>((n + grain - 1) / grain));
  parallel_for(n, grain, [&](std::int64_t i0, std::int64_t i1) {
    std::vector<T>& part = parts[static_cast<std::size_t>(i0 / grain)];
    fn(i0, i1, part);
    std::sort(part.begin(), part.end(), less);
  });
  std::vector<std::size_t> first(parts.size() + 1, 0);  // items before each chunk's
  for (std::size_t c = 0; c < parts.size(); ++c) first[c + 1] = first[c] + parts[c].size();
  const std::size_t total = first.back();
  constexpr std::size_t kBuckets = 256;
  std::vector<double> split;  // bucket b: split[b - 1] <= key < split[b]
  if (total > static_cast<std::size_t>(grain)) {
    for (std::size_t b = 1; b < kBuckets; ++b) {
      const std::size_t i = b * total / kBuckets;  // the i-th item in chunk order
      const auto c = static_cast<std::size_t>(std::upper_bound(first.begin(), first.end(), i) - first.begin()) - 1;
      split.push_back(key(parts[c][i - first[c]]));
    }
    std::sort(split.begin(), split.end());
    split.erase(std::unique(split.begin(), split.end()), split.end());
  }
  const std::size_t buckets = split.size() + 1;
  // Where bucket b starts in chunk c's sorted items.
  const auto begin_of = [&](std::size_t c, std::size_t b) -> std::size_t {
    if (b == 0) return 0;
    if (b == buckets) return parts[c].size();
    return static_cast<std::size_t>(
        std::partition_point(parts[c].begin(), parts[c].end(), [&](const T& x) { return key(x) < split[b - 1]; }) -
        parts[c].begin());
  };
  std::vector<Acc> accs(buckets);
  parallel_for(static_cast<std::int64_t>(buckets), 1, [&](std::int64_t b0, std::int64_t b1) {
    for (auto b = static_cast<std::size_t>(b0); b < static_cast<std::size_t>(b1); ++b) {
      std::vector<std::size_t> next(parts.size()), end(parts.size()), heap;  // a heap of chunks, least next item on top
      for (std::size_t c = 0; c < parts.size(); ++c) {
        next[c] = begin_of(c, b);
        end[c] = begin_of(c, b + 1);
        if (next[c] < end[c]) heap.push_back(c);
      }
      const auto later = [&](std::size_t x, std::size_t y) { return less(parts[y][next[y]], parts[x][next[x]]); };
      std::make_heap(heap.begin(), heap.end(), later);
      Acc& acc = accs[b];
      while (!heap.empty()) {
        std::pop_heap(heap.begin(), heap.end(), later);
        const std::size_t c = heap.back();
        acc.add(parts[c][next[c]]);
        if (++next[c] < end[c])
          std::push_heap(heap.begin(), heap.end(), later);
        else
          heap.pop_back();
      }
      acc.finish();
    }
  });
  Acc result = std::move(accs.front());
  for (std::size_t b = 1; b < buckets; ++b) merge(result, accs[b]);
  return result;
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
