//===- StateCollection.cpp - a planned model's training state as boxes ----===//

#include "lib/elastic/StateCollection.h"

#include "dialects/Whale/IR/TrainAttrs.h"
#include "lib/compile/Cluster.h"
#include "lib/compile/Planner.h"
#include "lib/compile/StageSignature.h"
#include "runtime/state/PlanState.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

namespace whale {

bool stateOf(const PlannedModel &plan, const Cluster &cluster,
             StateCollection &out, std::string &error) {
  // The optimizer's tensors per parameter, from the model's train block.
  const int stateCount = optimizerStateCount(
      plan.planned.get().lookupSymbol<mlir::func::FuncOp>(plan.model));
  // Each rank's program described as a compiled plan's manifest describes
  // it (replicas of another micro-batch size run other modules).
  std::vector<StageProgram> programs(
      static_cast<size_t>(plan.stages * plan.replicas));
  for (int64_t s = 0; s < plan.stages; ++s)
    for (int64_t r = 0; r < plan.replicas; ++r) {
      auto fn = plan.ranksOf(r).lookupSymbol<mlir::func::FuncOp>(
          plan.model + "_stage" + std::to_string(s));
      if (!fn) {
        error = "no rank program for stage " + std::to_string(s);
        return false;
      }
      if (!describeStage(fn, programs[s * plan.replicas + r], error))
        return false;
    }
  const PlanGrid grid{plan.model,
                      plan.stages,
                      plan.replicas,
                      plan.grid,
                      devicePlaces(cluster),
                      stateCount,
                      [&](int64_t s, int64_t r) -> const StageProgram & {
                        return programs[s * plan.replicas + r];
                      }};
  return planState(grid, out, error);
}

} // namespace whale
