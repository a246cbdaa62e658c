//===- StateCollection.h - a planned model's training state as boxes -*- C++
//-*-===//
//
// The state a JIT-planned model's ranks hold (runtime/state/PlanState.h),
// read from its rank programs: what is resharded is what the ranks hold,
// the same as a compiled plan of it describes.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_ELASTIC_STATECOLLECTION_H
#define WHALE_LIB_ELASTIC_STATECOLLECTION_H

#include "runtime/state/Reshard.h"

#include <string>

namespace whale {

struct Cluster;
struct PlannedModel;

/// The state of `plan` on `cluster`; false, with `error`, when a shard
/// cannot be placed (weights that do not divide the extent).
bool stateOf(const PlannedModel &plan, const Cluster &cluster,
             StateCollection &out, std::string &error);

} // namespace whale

#endif
