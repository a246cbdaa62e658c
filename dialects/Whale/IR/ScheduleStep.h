//===- ScheduleStep.h - one step of a pipeline stage's schedule --*- C++ -*-===//
//
// The element of #whale.schedule: the forward or the backward of one
// micro-batch. Declared apart so the generated attribute classes can hold
// an array of them.
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

  static ScheduleStep forward(int64_t j) { return {false, j}; }
  static ScheduleStep backwardOf(int64_t j) { return {true, j}; }
  /// "F3" or "B3".
  std::string str() const {
    return (backward ? "B" : "F") + std::to_string(microBatch);
  }
  bool operator==(const ScheduleStep &o) const {
    return backward == o.backward && microBatch == o.microBatch;
  }
};

inline llvm::hash_code hash_value(const ScheduleStep &s) {
  return llvm::hash_combine(s.backward, s.microBatch);
}

} // namespace whale

#endif // WHALE_DIALECT_SCHEDULESTEP_H
