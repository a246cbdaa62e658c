//===- Stopwatch.h - seconds elapsed on the steady clock ----------*- C++
//-*-===//
//
// The one helper for "how long did this take" in the reports that show it
// (the search's and the simulator's own time).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_SUPPORT_STOPWATCH_H
#define WHALE_SUPPORT_STOPWATCH_H

#include <chrono>

namespace whale {

/// Seconds from `start` to now, on the clock no time change moves.
inline double secondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start)
      .count();
}

} // namespace whale

#endif // WHALE_SUPPORT_STOPWATCH_H
