//===- ScheduleStep.h - one step of a pipeline stage's schedule --*- C++
//-*-===//
//
// The element of #whale.schedule: the forward or the backward of one
// micro-batch on one of the model chunks a pipeline rank holds (chunk 0
// unless the schedule interleaves). Declared apart so the generated
// attribute classes can hold an array of them.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_DIALECT_SCHEDULESTEP_H
#define WHALE_DIALECT_SCHEDULESTEP_H

#include "llvm/ADT/Hashing.h"

#include <cstdint>
#include <string>

namespace whale {

struct ScheduleStep {
  bool backward = false;
  int64_t microBatch = 0;
  /// Which of the rank's model chunks (interleaved schedules hold several).
  int64_t chunk = 0;

  static ScheduleStep forward(int64_t j, int64_t chunk = 0) {
    return {false, j, chunk};
  }
  static ScheduleStep backwardOf(int64_t j, int64_t chunk = 0) {
    return {true, j, chunk};
  }
  /// "F3" or "B3"; "F3.1" for chunk 1.
  std::string str() const {
    std::string s = (backward ? "B" : "F") + std::to_string(microBatch);
    if (chunk)
      s += "." + std::to_string(chunk);
    return s;
  }
  bool operator==(const ScheduleStep &o) const {
    return backward == o.backward && microBatch == o.microBatch &&
           chunk == o.chunk;
  }
};

inline llvm::hash_code hash_value(const ScheduleStep &s) {
  return llvm::hash_combine(s.backward, s.microBatch, s.chunk);
}

} // namespace whale

#endif // WHALE_DIALECT_SCHEDULESTEP_H
