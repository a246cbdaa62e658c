//===- PlanReport.h - what `whale plan` shows ---------------------*- C++
//-*-===//
//
// Per stage (TaskGraph): strategy, devices, schedule, parameter and peak
// activation memory per device, and the bytes each device communicates per
// step by kind, read off the planned module and the rank programs. The JSON
// form is documented in docs/parallelism.md.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_PLANREPORT_H
#define WHALE_LIB_PLANREPORT_H

#include "lib/Planner.h"

#include <string>

namespace whale {

std::string planText(const PlannedModel &plan);
std::string planJson(const PlannedModel &plan);

} // namespace whale

#endif
