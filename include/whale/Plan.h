//===- whale/Plan.h - plans, predictions and searches for a host --*- C++
//-*-===//
//
// What `whale plan --json`, `whale sim --json` and `whale search --json`
// print, for a host that reads them as data (the Python package turns them
// into objects). Nothing here prints.
//
//   whale::Interpreter interp;
//   interp.loadFile("gpt.whl");
//   std::string json, error;
//   if (!whale::planJson(interp, {"cpu:4"}, json, error)) ...
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_PLAN_H
#define WHALE_PLAN_H

#include "whale/Interpreter.h"

#include <cstddef>
#include <functional>
#include <string>

namespace whale {

struct PlanQuery {
  /// The devices: a spec (`cpu:4`, `a100x64`) or a cluster file.
  std::string cluster;
  /// A profile database (`whale profile`) the prediction reads; "": the
  /// device model's rates.
  std::string profile;
  /// Search: the candidates kept in the JSON, and those planned side by
  /// side (0: one per core).
  int top = 5, jobs = 0;
  /// Search: told each candidate as it is done (index from 1, count, its
  /// label and outcome as `whale search` prints them).
  std::function<void(size_t, size_t, const std::string &)> progress;
};

/// The loaded script's trained model planned over `query.cluster`, as
/// `whale plan --json` prints it; false with `error` when it cannot be.
bool planJson(Interpreter &interp, const PlanQuery &query, std::string &json,
              std::string &error);

/// The plan's predicted iteration, as `whale sim --json` prints it.
bool simulationJson(Interpreter &interp, const PlanQuery &query,
                    std::string &json, std::string &error);

/// The plans searched for the script at `file` (loaded with `options`:
/// its defines, configs and search path), as `whale search --json`
/// prints them.
bool searchJson(const std::string &file, const InterpreterOptions &options,
                const PlanQuery &query, std::string &json, std::string &error);

/// A run as the page `whale report` writes: its metrics (JSON lines, as a
/// run's metrics path receives them), with a plan (`planJson`'s) when not
/// empty. "" with `error` when a file cannot be read.
std::string runReportHtml(const std::string &metricsPath,
                          const std::string &planJsonPath,
                          const std::string &tracePath, std::string &error);

} // namespace whale

#endif
