//===- PlanReport.h - what `whale plan` shows ---------------------*- C++
//-*-===//
//
// Per stage (TaskGraph): strategy, devices, schedule, parameter and peak
// activation memory per device, and the bytes each device communicates per
// step by kind, read off the planned module and the rank programs. The JSON
// form is documented in docs/parallelism.md.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_REPORT_PLANREPORT_H
#define WHALE_LIB_REPORT_PLANREPORT_H

#include "lib/compile/Planner.h"

#include <string>

namespace whale {

/// `even`, when given, is the same model planned with equal shares (or
/// `evenError` says why it could not be), shown beside `plan`.
std::string planText(const PlannedModel &plan,
                     const PlannedModel *even = nullptr,
                     const std::string &evenError = "");
std::string planJson(const PlannedModel &plan,
                     const PlannedModel *even = nullptr,
                     const std::string &evenError = "");

} // namespace whale

#endif
