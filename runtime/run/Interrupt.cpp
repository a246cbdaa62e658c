//===- Interrupt.cpp - a request to stop a long run, from a signal --------===//

#include "runtime/run/Interrupt.h"

#include "support/OutputFile.h"

#include <atomic>
#include <csignal>
#include <unistd.h>

namespace whale {

namespace {
std::atomic<bool> requested{false};
std::atomic<int> signalled{0};
static_assert(std::atomic<bool>::is_always_lock_free,
              "set from a signal handler");
static_assert(std::atomic<int>::is_always_lock_free,
              "set from a signal handler");

void onStopSignal(int sig) {
  if (signalled.exchange(sig) != 0) {
    // The second: out now, without a temporary of the save in progress.
    rt::removeTemporaryInProgress();
    static const char msg[] = "whale: stopped at once\n";
    (void)!::write(2, msg, sizeof msg - 1);
    ::_exit(128 + sig);
  }
  static const char msg[] =
      "whale: stopping after the step in progress (again to stop at once)\n";
  (void)!::write(2, msg, sizeof msg - 1);
  requested.store(true, std::memory_order_relaxed);
}
} // namespace

void requestInterrupt() { requested.store(true, std::memory_order_relaxed); }
bool interruptRequested() { return requested.load(std::memory_order_relaxed); }
void clearInterrupt() { requested.store(false, std::memory_order_relaxed); }

struct StopOnSignals::Saved {
  static constexpr int kSignals[] = {SIGINT, SIGTERM, SIGHUP};
  struct sigaction before[3];
  bool installed[3] = {false, false, false};
};

StopOnSignals::StopOnSignals() : saved(new Saved) {
  signalled.store(0);
  struct sigaction action {};
  action.sa_handler = onStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  for (int i = 0; i < 3; ++i) {
    struct sigaction current {};
    if (sigaction(Saved::kSignals[i], nullptr, &current) != 0 ||
        current.sa_handler != SIG_DFL)
      continue;
    saved->installed[i] =
        sigaction(Saved::kSignals[i], &action, &saved->before[i]) == 0;
  }
}

StopOnSignals::~StopOnSignals() {
  for (int i = 0; i < 3; ++i)
    if (saved->installed[i])
      sigaction(Saved::kSignals[i], &saved->before[i], nullptr);
  delete saved;
}

int StopOnSignals::signal() const {
  return signalled.load(std::memory_order_relaxed);
}

} // namespace whale
