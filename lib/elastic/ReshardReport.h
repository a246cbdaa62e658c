//===- ReshardReport.h - a reshard plan as `whale reshard` shows it -*- C++
//-*-===//
//
// The plan of runtime/state/Reshard.h for people (a table) and for tools
// (JSON): what stays, what moves within a node and across nodes, per rank.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_ELASTIC_RESHARDREPORT_H
#define WHALE_LIB_ELASTIC_RESHARDREPORT_H

#include "runtime/state/Reshard.h"

#include <string>

namespace whale {

std::string reshardText(const StateCollection &from, const StateCollection &to,
                        const ReshardPlan &plan);
std::string reshardJson(const StateCollection &from, const StateCollection &to,
                        const ReshardPlan &plan);

} // namespace whale

#endif
