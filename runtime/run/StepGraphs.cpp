//===- StepGraphs.cpp - a plan's train steps held and replayed ------------===//

#include "runtime/run/StepGraphs.h"

#include <cstdlib>
#include <cstring>

namespace whale {
namespace {

bool graphsAllowed() {
  const char *v = std::getenv("WHALE_CUDA_GRAPHS");
  return !v || std::strcmp(v, "0") != 0;
}

/// The step captured, ended and run by one replay; on any failure the
/// capture is dropped with its tensors, `graph.why` says why, and the step
/// runs again as it is (nothing of the capture ran).
whale_rt_status captureStep(whale_rt_context *ctx, RankEntry entry,
                            whale_rt_tensor *const *inputs, RankGraph &graph,
                            int64_t step, whale_rt_tensor **loss) {
  if (whale_rt_step_capture_begin(ctx) != WHALE_RT_OK) {
    graph.why = whale_rt_last_error(ctx);
    return entry(ctx, inputs, loss);
  }
  whale_rt_status ran = entry(ctx, inputs, loss);
  if (ran == WHALE_RT_OK &&
      whale_rt_step_capture_end(ctx, graph.held) == WHALE_RT_OK) {
    graph.holding = true;
    graph.loss = *loss;
    graph.capturedAt = step;
    ++graph.replays;
    return whale_rt_step_replay(ctx);
  }
  // The device's reason first (an op it refused), else the step's error.
  graph.why = whale_rt_step_capture_blocker(ctx);
  if (graph.why.empty())
    graph.why = whale_rt_last_error(ctx);
  whale_rt_step_capture_drop(ctx); // frees the loss with the step's tensors
  *loss = nullptr;
  return entry(ctx, inputs, loss);
}

} // namespace

whale_rt_status runGraphedStep(whale_rt_context *ctx, RankEntry entry,
                               whale_rt_tensor *const *inputs, RankGraph &graph,
                               int64_t step, whale_rt_tensor **loss) {
  switch (graph.phase) {
  case RankGraph::Phase::Replay:
    ++graph.replays;
    *loss = graph.loss;
    return whale_rt_step_replay(ctx);
  case RankGraph::Phase::Capture:
    return captureStep(ctx, entry, inputs, graph, step, loss);
  case RankGraph::Phase::Probe: {
    graph.capable = whale_rt_step_capture_probe(ctx, 1) == WHALE_RT_OK;
    if (!graph.capable) {
      graph.why = whale_rt_last_error(ctx);
      return entry(ctx, inputs, loss);
    }
    whale_rt_status ran = entry(ctx, inputs, loss);
    whale_rt_step_capture_probe(ctx, 0);
    graph.why = whale_rt_step_capture_blocker(ctx);
    return ran;
  }
  case RankGraph::Phase::Warmup:
  case RankGraph::Phase::Off:
    break;
  }
  return entry(ctx, inputs, loss);
}

void forgetGraph(whale_rt_context *ctx, RankGraph &graph) {
  if (!graph.holding)
    return;
  whale_rt_step_capture_drop(ctx);
  if (graph.loss)
    whale_rt_tensor_release(ctx, graph.loss);
  graph.loss = nullptr;
  graph.holding = false;
  if (graph.phase == RankGraph::Phase::Replay)
    graph.phase = RankGraph::Phase::Capture;
}

void advanceGraphs(const std::vector<RankGraph *> &graphs,
                   const std::vector<std::string> &who,
                   const std::vector<whale_rt_context *> &contexts) {
  if (graphs.empty())
    return;
  const RankGraph::Phase phase = graphs[0]->phase;
  auto allOff = [&](const std::string &why) {
    for (size_t i = 0; i < graphs.size(); ++i) {
      forgetGraph(contexts[i], *graphs[i]);
      graphs[i]->phase = RankGraph::Phase::Off;
      graphs[i]->why = why;
    }
  };
  // The first rank's reason, named, stands for all.
  auto firstWhy = [&]() -> std::string {
    for (size_t i = 0; i < graphs.size(); ++i)
      if (!graphs[i]->why.empty())
        return graphs.size() > 1 ? who[i] + ": " + graphs[i]->why
                                 : graphs[i]->why;
    return "";
  };
  switch (phase) {
  case RankGraph::Phase::Warmup:
    if (!graphsAllowed()) {
      allOff("WHALE_CUDA_GRAPHS=0");
      return;
    }
    for (RankGraph *g : graphs)
      g->phase = RankGraph::Phase::Probe;
    return;
  case RankGraph::Phase::Probe: {
    bool capable = true;
    for (RankGraph *g : graphs)
      capable = capable && g->capable;
    std::string why = firstWhy();
    if (!why.empty() || !capable) {
      allOff(why);
      return;
    }
    for (RankGraph *g : graphs)
      g->phase = RankGraph::Phase::Capture;
    return;
  }
  case RankGraph::Phase::Capture: {
    std::string why = firstWhy();
    if (!why.empty()) {
      // Every rank's held step goes: they run on without graphs alike.
      allOff(why);
      return;
    }
    for (RankGraph *g : graphs)
      g->phase = RankGraph::Phase::Replay;
    return;
  }
  case RankGraph::Phase::Replay:
  case RankGraph::Phase::Off:
    return;
  }
}

std::string graphReport(const std::vector<const RankGraph *> &graphs) {
  bool capable = false;
  for (const RankGraph *g : graphs)
    capable = capable || g->capable;
  if (graphs.empty() || !capable)
    return "";
  const RankGraph &g = *graphs[0];
  if (g.phase == RankGraph::Phase::Off)
    return "steps ran op by op, not as a CUDA graph: " +
           (g.why.empty() ? std::string("a rank's device cannot hold a step")
                          : g.why);
  if (g.capturedAt == 0)
    return "steps ran op by op: the run ended before its step was captured";
  std::string line =
      "step " + std::to_string(g.capturedAt) + " captured as a CUDA graph of " +
      std::to_string(g.held[0]) + " operations (" + std::to_string(g.held[1]) +
      " kernels, " + std::to_string(g.held[2]) + " copies, " +
      std::to_string(g.held[3]) + " fills)";
  if (graphs.size() > 1)
    line += " on rank 0 of " + std::to_string(graphs.size());
  return line + "; " + std::to_string(g.replays) +
         " steps replayed it, one launch each";
}

} // namespace whale
