//===- RecoveryLine.h - the line a recovery from a failure prints -*- C++
//-*-===//
//
// `whale run` (a RecoveryReport) and `whale-exec` (an ExecRecovery) print
// each recovery alike: the failure, what the job went on under, the step
// it went back to and what that cost.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_TOOLS_RECOVERYLINE_H
#define WHALE_TOOLS_RECOVERYLINE_H

#include <cstdio>
#include <string>

namespace whale::cli {

/// `r`'s line; `change` says what the job went on under ("4 -> 2
/// devices", "4 -> 2 ranks under FOLDER").
template <class Report>
std::string recoveryLine(const Report &r, const std::string &change) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.3f", r.seconds);
  return "recovered from a failure in step " + std::to_string(r.failedStep) +
         " (" + r.failure + "): " + change + ", resumed after step " +
         std::to_string(r.resumedAfter) +
         (r.source == "memory" ? "" : " from the " + r.source) + " (" +
         std::to_string(r.failedStep - 1 - r.resumedAfter) +
         " finished steps lost), moved " + std::to_string(r.movedBytes) +
         " bytes, " +
         (r.processesLost > 0
              ? std::to_string(r.processesLost) + " process(es) lost, " +
                    std::to_string(r.processBytes) +
                    " bytes sent between the survivors, "
              : std::string()) +
         seconds + " s\n";
}

} // namespace whale::cli

#endif
