//===- Interrupt.h - a request to stop a run, from a signal --*- C++ -*-===//
//
// A signal asks, and the train loops stop at the next step boundary with
// an error that says where, saving what is done where --save was given.
// The REPL's Ctrl-C goes back to its prompt; `whale run` catches SIGINT,
// SIGTERM and SIGHUP (a user's Ctrl-C, a scheduler's stop, a closed
// terminal) and exits non-zero after the save. Async-signal-safe: a
// lock-free atomic flag.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_RUN_INTERRUPT_H
#define WHALE_RUNTIME_RUN_INTERRUPT_H

namespace whale {

/// Asks the running train loop to stop (safe in a signal handler).
void requestInterrupt();
/// Whether a stop was asked for since the last clearInterrupt().
bool interruptRequested();
void clearInterrupt();

/// For a command-line tool, while it lives: SIGINT, SIGTERM and SIGHUP ask
/// the run to stop at its next step boundary. A second one while it
/// finishes ends the process at once (exit status 128 + the signal),
/// removing a checkpoint file half written, so that an impatient user is
/// never stuck. A signal someone else handles already (the REPL's Ctrl-C,
/// a host application's) is left to them; the previous handlers come back
/// when it is destroyed.
class StopOnSignals {
public:
  StopOnSignals();
  ~StopOnSignals();
  StopOnSignals(const StopOnSignals &) = delete;
  StopOnSignals &operator=(const StopOnSignals &) = delete;

  /// The signal that asked the stop, or 0.
  int signal() const;

private:
  struct Saved;
  Saved *saved;
};

} // namespace whale

#endif
