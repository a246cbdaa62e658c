//===- FuzzJsonInputs.cpp - libFuzzer target: cluster, profile, schedule --===//
//
// A cluster file, a short cluster spec, a profile database and an elastic
// schedule come from the user: any bytes must give a value or a located
// error, never a crash, a hang or an unbounded allocation (a node's `count`
// and a device's `count` are bounded, so a tiny file cannot ask for
// millions of devices; nesting is bounded before the JSON parser recurses).
//
//===----------------------------------------------------------------------===//

#include "lib/Cluster.h"
#include "lib/ElasticSchedule.h"
#include "sim/ProfileDb.h"

#include <cstddef>
#include <cstdint>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  std::string error;
  whale::Cluster cluster;
  (void)whale::parseClusterJson(text, "fuzz.json", cluster, error);
  whale::sim::ProfileDb db;
  (void)db.parse(text, "fuzz.json", error);
  // As a short spec too, unless it could name a file to read.
  if (size < 512 && text.find('/') == std::string::npos &&
      text.find(".json") == std::string::npos) {
    whale::Cluster spec;
    (void)whale::parseCluster(text, spec, error);
  }
  // As an elastic schedule ("STEP SPEC" lines); its specs are checked as
  // written, not read as files.
  std::vector<whale::ElasticChange> schedule;
  (void)whale::parseElasticSchedule(text, "fuzz.sched", schedule, error);
  return 0;
}
