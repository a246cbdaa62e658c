//===- MappedRead.cpp - reading a mapped file that may shrink -------------===//

#include "runtime/data/MappedRead.h"

#include <csignal>
#include <mutex>

namespace whale::rt::detail {

namespace {
struct sigaction previous;

void onBusError(int sig, siginfo_t *info, void *context) {
  if (sigjmp_buf *jump = activeMappedRead())
    siglongjmp(*jump, 1);
  // Not a guarded read: as before this handler was there.
  if (previous.sa_flags & SA_SIGINFO) {
    if (previous.sa_sigaction) {
      previous.sa_sigaction(sig, info, context);
      return;
    }
  } else if (previous.sa_handler != SIG_DFL &&
             previous.sa_handler != SIG_IGN) {
    previous.sa_handler(sig);
    return;
  }
  // The default: returning re-runs the faulting access, which then kills
  // the process with SIGBUS as it would have.
  signal(SIGBUS, SIG_DFL);
}
} // namespace

sigjmp_buf *&activeMappedRead() {
  static thread_local sigjmp_buf *active = nullptr;
  return active;
}

void installMappedReadGuard() {
  static std::once_flag once;
  std::call_once(once, [] {
    struct sigaction action {};
    action.sa_sigaction = onBusError;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_SIGINFO;
    sigaction(SIGBUS, &action, &previous);
  });
}

} // namespace whale::rt::detail
