//===- Interrupt.cpp - a request to stop a long run, from a signal --------===//

#include "lib/Interrupt.h"

#include <atomic>

namespace whale {

namespace {
std::atomic<bool> requested{false};
static_assert(std::atomic<bool>::is_always_lock_free,
              "set from a signal handler");
} // namespace

void requestInterrupt() { requested.store(true, std::memory_order_relaxed); }
bool interruptRequested() { return requested.load(std::memory_order_relaxed); }
void clearInterrupt() { requested.store(false, std::memory_order_relaxed); }

} // namespace whale
