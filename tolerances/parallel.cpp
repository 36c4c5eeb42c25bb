// The check pipeline's parallel loop (tolerances/parallel_detail.h).
#include "tolerances/parallel_detail.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <mutex>
#include <system_error>
#include <thread>
#include <vector>

#include "formats/platform.h"
#include "oracles/mpfr_oracles.h"
#include "tolerances/cancel.h"

namespace numfid::detail {

namespace {
std::atomic<int> g_threads_override{0};
}  // namespace

int check_threads() {
  if (const int n = g_threads_override.load(); n > 0) return n;
  if (const char* env = std::getenv("NUMFID_THREADS"); env != nullptr && *env != '\0') {
    char* end = nullptr;
    const long n = std::strtol(env, &end, 10);
    if (end != env && *end == '\0' && n >= 1) return static_cast<int>(std::min<long>(n, 1024));
  }
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

void set_check_threads(int n) { g_threads_override.store(std::max(0, n)); }

void parallel_for(std::int64_t n, std::int64_t grain, const std::function<void(std::int64_t, std::int64_t)>& fn) {
  if (n <= 0) return;
  grain = std::max<std::int64_t>(1, grain);
  const std::int64_t chunks = (n + grain - 1) / grain;
  const auto threads = static_cast<std::int64_t>(std::min<std::int64_t>(check_threads(), chunks));
  std::atomic<std::int64_t> next{0};
  std::atomic<bool> failed{false};
  std::exception_ptr error;
  std::mutex error_mutex;
  // `caller`: the calling thread polls its CancelScope (tolerances/cancel.h) before each chunk;
  // the scope is thread-local (a Python poll must run on the thread that holds the signal
  // handlers), so workers never poll: a cancel stops them after their current chunk.
  auto work = [&](bool caller) {
    const FpEnvGuard env;  // each thread has its own floating-point environment
    for (;;) {
      if (failed.load(std::memory_order_relaxed)) return;
      try {
        if (caller) check_cancelled();
        const std::int64_t c = next.fetch_add(1);
        if (c >= chunks) return;
        fn(c * grain, std::min(n, (c + 1) * grain));
      } catch (...) {
        const std::lock_guard<std::mutex> lock(error_mutex);
        if (!error) error = std::current_exception();
        failed.store(true);
      }
    }
  };
  std::vector<std::thread> pool;
  pool.reserve(static_cast<std::size_t>(threads > 0 ? threads - 1 : 0));
  for (std::int64_t t = 1; t < threads; ++t) {
    try {
      pool.emplace_back([&work] {
        work(false);
        release_oracle_thread_caches();  // MPFR's per-thread caches would outlive the thread
      });
    } catch (const std::system_error&) {
      break;  // no more threads to be had: the ones running (and this one) take every chunk
    }
  }
  work(true);
  for (std::thread& t : pool) t.join();
  if (error) std::rethrow_exception(error);
}

}  // namespace numfid::detail
