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
// `#` starts a comment; blank lines are skipped. Steps rise line by line.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_ELASTIC_ELASTICSCHEDULE_H
#define WHALE_LIB_ELASTIC_ELASTICSCHEDULE_H

#include "whale/Train.h"

#include <string>
#include <vector>

namespace whale {

/// Reads a schedule; false with `error` as `PATH:LINE:COL: error: ...`.
bool parseElasticSchedule(const std::string &text, const std::string &path,
                          std::vector<ElasticChange> &out, std::string &error);

} // namespace whale

#endif
