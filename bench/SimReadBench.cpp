//===- SimReadBench.cpp - the simulator's reading and replay, timed -------===//
//
// Plans a script once, then reads its rank programs into events and
// replays them several times, printing each round's seconds and the
// fastest. `whale sim` times one reading of a plan that took seconds to
// make; on a shared machine one reading moves by 10-20% from process to
// process, too much to tell a change to the reader from noise.
//
//   whale-sim-read-bench FILE.whl CLUSTER [--rounds N] [--define K=V]...
//                        [--config K=V]...
//
//===----------------------------------------------------------------------===//

#include "lib/compile/Cluster.h"
#include "lib/compile/Planner.h"
#include "lib/perf/Simulate.h"
#include "whale/Interpreter.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>
#include <vector>

namespace {

/// KEY=VALUE into `into`, the value read by `read` (text as given, or a
/// config value).
template <class Map, class Read>
bool keyValue(const char *text, Map &into, Read read) {
  const char *eq = std::strchr(text, '=');
  if (!eq)
    return false;
  into[std::string(text, eq)] = read(std::string(eq + 1));
  return true;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

} // namespace

int main(int argc, char **argv) {
  if (argc < 3) {
    std::fprintf(stderr,
                 "usage: %s FILE.whl CLUSTER [--rounds N] "
                 "[--define K=V]... [--config K=V]...\n",
                 argv[0]);
    return 2;
  }
  whale::InterpreterOptions opts;
  int rounds = 5;
  for (int i = 3; i < argc; ++i) {
    const bool hasValue = i + 1 < argc;
    if (!std::strcmp(argv[i], "--rounds") && hasValue)
      rounds = std::max(1, std::atoi(argv[++i]));
    else if (!std::strcmp(argv[i], "--define") && hasValue &&
             keyValue(argv[i + 1], opts.defines,
                      [](std::string v) { return v; }))
      ++i;
    else if (!std::strcmp(argv[i], "--config") && hasValue &&
             keyValue(argv[i + 1], opts.configs, whale::parseConfigValue))
      ++i;
    else {
      std::fprintf(stderr, "unknown or incomplete option '%s'\n", argv[i]);
      return 2;
    }
  }
  whale::Cluster cluster;
  std::string error;
  if (!whale::parseCluster(argv[2], cluster, error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  whale::Interpreter interp(opts);
  if (!interp.loadFile(argv[1]) || !interp.module()) {
    std::fprintf(stderr, "%s", interp.renderDiagnostics().c_str());
    return 1;
  }
  whale::PlanOptions planning;
  planning.defaultThreads = whale::sharedThreads(cluster, 0);
  whale::PlannedModel plan;
  if (!whale::planModel(interp, "", cluster, planning, plan, error)) {
    std::fprintf(stderr, "%s\n", error.c_str());
    return 1;
  }
  whale::SimulateOptions options;
  options.defaultThreads = planning.defaultThreads;
  std::vector<double> reads, replays;
  double iteration = 0;
  int64_t steps = 0;
  for (int r = 0; r < rounds; ++r) {
    whale::Simulation sim;
    if (!whale::simulatePlan(plan, cluster, options, sim, error)) {
      std::fprintf(stderr, "%s\n", error.c_str());
      return 1;
    }
    reads.push_back(sim.extractSeconds);
    replays.push_back(sim.replaySeconds);
    iteration = sim.iterationSeconds();
    steps = sim.result.replayedSteps;
    std::printf("round %d: read %.3f s, replay %.4f s\n", r + 1,
                sim.extractSeconds, sim.replaySeconds);
  }
  std::printf("%lld steps, %.3f s per iteration predicted\n",
              static_cast<long long>(steps), iteration);
  std::printf("read: fastest %.3f s, median %.3f s; replay: fastest %.4f s, "
              "median %.4f s\n",
              *std::min_element(reads.begin(), reads.end()), median(reads),
              *std::min_element(replays.begin(), replays.end()),
              median(replays));
  // The plan's millions of ops go with the process, not one by one.
  std::fflush(stdout);
  std::_Exit(0);
}
