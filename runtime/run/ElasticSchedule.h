//===- ElasticSchedule.h - when a running job's devices change ----*- C++
//-*-===//
//
// `whale run --elastic FILE`: one change a line, the step after which the
// job goes on on other devices and the devices (a cluster spec):
//
//   # shrink to two devices after step 3, grow to eight after step 6
//   3 cpu:2
//   6 cpu:8
//
// `whale-exec --elastic FILE` names a compiled plan of the same model in
// place of the devices (the rest of the line: a folder, spaces and all).
// `#` starts a comment; blank lines are skipped. Steps rise line by line.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_RUN_ELASTICSCHEDULE_H
#define WHALE_RUNTIME_RUN_ELASTICSCHEDULE_H

#include <cstdint>
#include <string>
#include <vector>

namespace whale {

/// What a change moves the job to.
enum class ChangeTarget {
  Devices,     ///< a cluster spec (whale run)
  CompiledPlan ///< a folder `whale compile --emit=bundle` wrote (whale-exec)
};

struct ScheduledChange {
  int64_t afterStep = 0;
  std::string target;
};

/// Reads a schedule; false with `error` as `PATH:LINE:COL: error: ...`.
bool parseElasticSchedule(const std::string &text, const std::string &path,
                          ChangeTarget kind, std::vector<ScheduledChange> &out,
                          std::string &error);

} // namespace whale

#endif
