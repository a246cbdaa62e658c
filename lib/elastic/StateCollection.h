//===- StateCollection.h - a plan's training state as boxes -------*- C++
//-*-===//
//
// The state a plan's ranks hold between steps, as lib/elastic/Reshard.h
// describes it: every parameter and each of its optimizer tensors
// (NAME.optimizer_K, as checkpoints name them) with the box each rank holds
// (the whole, or its part of a shard group's split, uneven shards included),
// and the step and the seed every rank keeps (the data position follows from
// them). Read from the rank programs the runtime runs, so what is resharded
// is what the ranks hold.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_ELASTIC_STATECOLLECTION_H
#define WHALE_LIB_ELASTIC_STATECOLLECTION_H

#include "lib/elastic/Reshard.h"

#include <string>

namespace whale {

struct Cluster;
struct PlannedModel;

/// Each device's name, the same for the same device in two plans: its
/// node, its kind and its place among the node's devices of that kind.
std::vector<RankPlace> devicePlaces(const Cluster &cluster);

/// The state of `plan` on `cluster`; false, with `error`, when a shard
/// cannot be placed (weights that do not divide the extent).
bool stateOf(const PlannedModel &plan, const Cluster &cluster,
             StateCollection &out, std::string &error);

} // namespace whale

#endif
