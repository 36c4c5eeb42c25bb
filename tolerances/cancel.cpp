// Cooperative cancellation (tolerances/cancel.h).
#include "tolerances/cancel.h"

#include <utility>

namespace numfid {

namespace {
thread_local CancelScope* current_scope = nullptr;
}  // namespace

CancelScope::CancelScope(std::function<bool()> poll) : poll_(std::move(poll)), outer_(current_scope) {
  current_scope = this;
}

CancelScope::~CancelScope() { current_scope = outer_; }

void check_cancelled() {
  const CancelScope* s = current_scope;
  if (s != nullptr && s->poll_ && s->poll_()) throw Cancelled();
}

}  // namespace numfid
