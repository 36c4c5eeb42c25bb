// Cooperative cancellation of a long check: a caller (the Python module, on Ctrl-C) installs
// a poll function for the current thread; the pipeline's loops call check_cancelled() between
// rows, which throws Cancelled when the poll says so. Without a scope it costs one
// thread-local load. Nothing is left half-done: a check either returns its whole result or
// throws before returning anything.
#pragma once

#include <functional>
#include <stdexcept>

namespace numfid {

/// Thrown by check_cancelled() when the installed poll function asked to stop.
struct Cancelled : std::runtime_error {
  Cancelled() : std::runtime_error("cancelled") {}
};

/// Installs `poll` for the current thread while the scope lives (scopes nest: the inner one
/// wins, the outer one is restored). `poll` returns true to cancel; it is called from inside
/// the pipeline's loops, so it must be cheap or throttle itself.
class CancelScope {
 public:
  explicit CancelScope(std::function<bool()> poll);
  ~CancelScope();
  CancelScope(const CancelScope&) = delete;
  CancelScope& operator=(const CancelScope&) = delete;

 private:
  friend void check_cancelled();
  std::function<bool()> poll_;
  CancelScope* outer_;
};

/// Throws Cancelled if the current thread's CancelScope asks to stop; else does nothing.
void check_cancelled();

}  // namespace numfid
