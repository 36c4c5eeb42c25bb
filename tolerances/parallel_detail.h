// The check pipeline's own threads (internal; not installed): a parallel loop over independent items (elements, rows,
// tiles), so that `numfid check` uses every core. Each item's result depends on the item only,
// never on which thread computed it or in which order, so results are identical for any
// thread count (tests/reference_fast_test.cpp checks 1, 2 and 7 threads).
#pragma once

#include <cstdint>
#include <functional>

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

}  // namespace numfid::detail
