//===- Plan.cpp - plans, predictions and searches for a host --------------===//

#include "whale/Plan.h"

#include "lib/compile/Cluster.h"
#include "lib/compile/Planner.h"
#include "lib/perf/Search.h"
#include "lib/perf/Simulate.h"
#include "lib/report/PlanReport.h"
#include "lib/report/Report.h"
#include "sim/ProfileDb.h"

#include "llvm/Support/FormatVariadic.h"

namespace whale {
namespace {

/// Plans the loaded model over `spec`; "" or why not.
std::string planOn(Interpreter &interp, const std::string &spec,
                   Cluster &cluster, PlannedModel &plan) {
  std::string error;
  if (!interp.module())
    return "no script is loaded (or it has errors: see the diagnostics)";
  if (spec.empty())
    return "no cluster: give the devices, such as cpu:4";
  if (!parseCluster(spec, cluster, error))
    return error;
  PlanOptions options;
  options.defaultThreads = sharedThreads(cluster, 0);
  if (!planModel(interp, "", cluster, options, plan, error))
    return error.empty() ? "planning failed" : error;
  return "";
}

} // namespace

bool planJson(Interpreter &interp, const PlanQuery &query, std::string &json,
              std::string &error) {
  Cluster cluster;
  PlannedModel plan;
  if (!(error = planOn(interp, query.cluster, cluster, plan)).empty())
    return false;
  json = planJson(plan, nullptr, "");
  return true;
}

bool simulationJson(Interpreter &interp, const PlanQuery &query,
                    std::string &json, std::string &error) {
  sim::ProfileDb db;
  if (!query.profile.empty() && !db.load(query.profile, error))
    return false;
  Cluster cluster;
  PlannedModel plan;
  if (!(error = planOn(interp, query.cluster, cluster, plan)).empty())
    return false;
  SimulateOptions options;
  if (!query.profile.empty())
    options.profile = &db;
  options.defaultThreads = sharedThreads(cluster, 0);
  Simulation sim;
  if (!simulatePlan(plan, cluster, options, sim, error))
    return false;
  json = simulationJson(sim, plan);
  return true;
}

bool searchJson(const std::string &file, const InterpreterOptions &options,
                const PlanQuery &query, std::string &json, std::string &error) {
  Cluster cluster;
  if (query.cluster.empty()) {
    error = "no cluster: give the devices, such as cpu:4";
    return false;
  }
  if (!parseCluster(query.cluster, cluster, error))
    return false;
  sim::ProfileDb db;
  if (!query.profile.empty() && !db.load(query.profile, error))
    return false;
  SearchOptions search;
  search.top = query.top;
  search.jobs = query.jobs;
  search.defaultThreads = sharedThreads(cluster, 0);
  if (!query.profile.empty())
    search.profile = &db;
  if (query.progress)
    search.progress = [&](size_t done, size_t total, const SearchCandidate &k) {
      std::string line = k.label();
      if (k.outcome == SearchCandidate::Outcome::Simulated)
        line += llvm::formatv(": {0:F3} ms", k.iterationSeconds * 1e3).str();
      else
        line += ": " + k.reason;
      query.progress(done, total, line);
    };
  SearchResult result;
  if (!searchPlans(file, options, cluster, search, result, error))
    return false;
  json = searchJson(result, query.top);
  return true;
}

std::string runReportHtml(const std::string &metricsPath,
                          const std::string &planJsonPath,
                          const std::string &tracePath, std::string &error) {
  ReportInputs in;
  in.metricsPath = metricsPath;
  in.planPath = planJsonPath;
  in.tracePath = tracePath;
  return reportHtml(in, error);
}

} // namespace whale
