//===- Report.h - a run as one HTML page --------------------------*- C++
//-*-===//
//
// `whale report METRICS.jsonl [--trace T.json] [--sim-trace S.json]
// [--plan P.json] -o report.html`: one self-contained page (no network, no
// script: inline SVG and CSS) with the loss curve (and the held-out loss),
// samples/s over steps, one measured step (the median by length of those
// after the first) beside one predicted iteration on one time scale, each
// with every rank's busy, communication and idle time and its timeline
// (the pipeline schedule as it ran), and the plan.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_REPORT_REPORT_H
#define WHALE_LIB_REPORT_REPORT_H

#include <string>

namespace whale {

struct ReportInputs {
  std::string metricsPath;  ///< whale run --metrics (required)
  std::string tracePath;    ///< whale run --trace
  std::string simTracePath; ///< whale sim --trace
  std::string planPath;     ///< whale plan --json
};

/// The page, or "" with `error` naming the file and what is wrong in it.
std::string reportHtml(const ReportInputs &in, std::string &error);

} // namespace whale

#endif
