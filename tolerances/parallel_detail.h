// The check pipeline's own threads (internal; not installed): a parallel loop over independent items (elements, rows,
// tiles), so that `numfid check` uses every core. Each item's result depends on the item only,
// never on which thread computed it or in which order, so results are identical for any
// thread count (tests/reference_fast_test.cpp checks 1, 2 and 7 threads).
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
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
/// `less`, on every core. The range of `key` is cut into at most 256 buckets at splitters taken
/// from 2048 items sampled at fixed places (in chunk order); each chunk's items are grouped by
/// bucket on the thread that collected them; each bucket's items, gathered from every chunk, are
/// sorted by `less` and visited in that order by an `Acc` of its own — acc.add(item) for each,
/// then acc.finish() — and the buckets' Accs are merged in bucket order (merge(into, next)).
/// `less` must order by key first (key(x) < key(y) implies less(x, y)) and be a strict total
/// order on the items' values (items it cannot tell apart are equal in every field); key is
/// never NaN. The buckets then depend on the chunks (n and grain) only and each bucket's order is
/// unique: the result is the same for any thread count, and items of one key are visited by one
/// Acc, one after another. (Sorting each bucket once replaced sorting each chunk and merging
/// the chunks' runs through a heap: 2048 x 2048 elements, 2026-12-05, docs/performance.md.)
template <class Acc, class T, class Fn, class Less, class Key, class Merge>
Acc parallel_collect_ordered(std::int64_t n, std::int64_t grain, Fn fn, Less less, Key key, Merge merge) {
  if (n <= 0) return Acc{};
  grain = grain < 1 ? 1 : grain;
  std::vector<std::vector<T>> parts(static_cast<std::size_t>((n + grain - 1) / grain));
  parallel_for(n, grain, [&](std::int64_t i0, std::int64_t i1) {
    std::vector<T>& part = parts[static_cast<std::size_t>(i0 / grain)];
    part.reserve(static_cast<std::size_t>(i1 - i0));
    fn(i0, i1, part);
  });
  std::vector<std::size_t> first(parts.size() + 1, 0);  // items before each chunk's
  for (std::size_t c = 0; c < parts.size(); ++c) first[c + 1] = first[c] + parts[c].size();
  const std::size_t total = first.back();
  constexpr std::size_t kBuckets = 256, kSample = 8 * kBuckets;
  static_assert(kBuckets <= 256, "bucket numbers are bytes");
  std::vector<double> split;  // bucket b: split[b - 1] <= key < split[b]
  if (total > static_cast<std::size_t>(grain)) {
    std::vector<double> sample;
    for (std::size_t s = 0; s < kSample; ++s) {
      const std::size_t i = s * total / kSample;  // the i-th item in chunk order
      const auto c = static_cast<std::size_t>(std::upper_bound(first.begin(), first.end(), i) - first.begin()) - 1;
      sample.push_back(key(parts[c][i - first[c]]));
    }
    std::sort(sample.begin(), sample.end());
    for (std::size_t b = 1; b < kBuckets; ++b) split.push_back(sample[b * kSample / kBuckets]);
    split.erase(std::unique(split.begin(), split.end()), split.end());
  }
  const std::size_t buckets = split.size() + 1;
  std::vector<double> padded(split);  // kBuckets - 1 splitters, the missing ones +inf
  padded.resize(kBuckets - 1, std::numeric_limits<double>::infinity());
  // Each chunk's items grouped by bucket (a stable counting sort); at[c][b]: where bucket b
  // starts in chunk c.
  // Several chunks per call, so that the buffers are reused: fresh pages cost more here than the
  // copy back.
  std::vector<std::vector<std::size_t>> at(parts.size());
  const auto some = [](std::size_t items) {
    return static_cast<std::int64_t>(std::max<std::size_t>(1, items / (4 * static_cast<std::size_t>(check_threads()))));
  };
  parallel_for(static_cast<std::int64_t>(parts.size()), some(parts.size()), [&](std::int64_t c0, std::int64_t c1) {
    std::vector<std::uint8_t> bucket;
    std::vector<T> grouped;
    for (auto c = static_cast<std::size_t>(c0); c < static_cast<std::size_t>(c1); ++c) {
      std::vector<T>& part = parts[c];
      std::vector<std::size_t>& start = at[c];
      start.assign(buckets + 1, 0);
      if (buckets == 1) {
        start[1] = part.size();
        continue;
      }
      bucket.resize(part.size());
      for (std::size_t i = 0; i < part.size(); ++i) {
        // The number of splitters <= key: a binary search without branches over `padded`.
        const double k = key(part[i]);
        std::size_t b = 0;
        for (std::size_t step = kBuckets / 2; step > 0; step /= 2)
          b += step * static_cast<std::size_t>(padded[b + step - 1] <= k);
        bucket[i] = static_cast<std::uint8_t>(b);
        ++start[b + 1];
      }
      for (std::size_t b = 0; b < buckets; ++b) start[b + 1] += start[b];
      std::vector<std::size_t> put(start.begin(), start.end() - 1);
      grouped.resize(part.size());
      for (std::size_t i = 0; i < part.size(); ++i) grouped[put[bucket[i]]++] = part[i];
      std::copy(grouped.begin(), grouped.end(), part.begin());
    }
  });
  std::vector<Acc> accs(buckets);
  parallel_for(static_cast<std::int64_t>(buckets), some(buckets), [&](std::int64_t b0, std::int64_t b1) {
    std::vector<T> items;
    for (auto b = static_cast<std::size_t>(b0); b < static_cast<std::size_t>(b1); ++b) {
      items.clear();
      for (std::size_t c = 0; c < parts.size(); ++c)
        items.insert(items.end(), parts[c].begin() + static_cast<std::ptrdiff_t>(at[c][b]),
                     parts[c].begin() + static_cast<std::ptrdiff_t>(at[c][b + 1]));
      std::sort(items.begin(), items.end(), less);
      Acc& acc = accs[b];
      for (const T& x : items) acc.add(x);
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
