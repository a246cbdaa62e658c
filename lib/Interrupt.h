//===- Interrupt.h - a request to stop a run, from a signal --*- C++ -*-===//
//
// The REPL's Ctrl-C: a signal handler asks, and the train loops stop at the
// next step boundary with an error that says where, so the session that
// started the run goes on. Async-signal-safe: a lock-free atomic flag.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_INTERRUPT_H
#define WHALE_LIB_INTERRUPT_H

namespace whale {

/// Asks the running train loop to stop (safe in a signal handler).
void requestInterrupt();
/// Whether a stop was asked for since the last clearInterrupt().
bool interruptRequested();
void clearInterrupt();

} // namespace whale

#endif
