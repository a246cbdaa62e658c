//===- CAPIPlan.cpp - the C API: plan, simulate, train --------------------===//

#include "lib/api/CAPIInternal.h"

#include "whale/Plan.h"
#include "whale/Train.h"

namespace {

/// Trains the loaded script's model as whale_interp_train and
/// whale_interp_train_mpi ask.
whale_status trainLoaded(whale_interp *w, const char *cluster, long long steps,
                         const char *metrics, bool processes,
                         const void *mpiComm, double *finalLoss) {
  if (!w || steps < 0)
    return WHALE_ERROR_ARGUMENT;
  std::lock_guard<std::mutex> guard(w->lock);
  if (!w->interp->module())
    return w->outcome(
        "no script is loaded (or it has errors: see the diagnostics)");
  whale::TrainOptions options;
  if (cluster)
    options.cluster = cluster;
  if (steps > 0)
    options.steps = steps;
  if (metrics)
    options.metricsPath = metrics;
  options.processes = processes;
  options.mpiCommunicator = mpiComm;
  whale::TrainResult r = whale::train(*w->interp, options);
  if (r.ok && finalLoss && !r.losses.empty())
    *finalLoss = r.losses.back();
  return w->outcome(r.ok ? "" : r.error);
}

} // namespace

extern "C" {

const char *whale_interp_last_error(whale_interp *w) {
  if (!w)
    return "";
  std::lock_guard<std::mutex> guard(w->lock);
  return w->lastError.c_str();
}

whale_status whale_interp_plan(whale_interp *w, const char *cluster,
                               char **json) {
  if (!w || !cluster || !json)
    return WHALE_ERROR_ARGUMENT;
  std::lock_guard<std::mutex> guard(w->lock);
  *json = nullptr;
  whale::PlanQuery query;
  query.cluster = cluster;
  std::string text, error;
  if (!whale::planJson(*w->interp, query, text, error))
    return w->outcome(error);
  *json = whale::capi::newString(text);
  return w->outcome(*json ? "" : "out of memory");
}

whale_status whale_interp_simulate(whale_interp *w, const char *cluster,
                                   const char *profile, char **json) {
  if (!w || !cluster || !json)
    return WHALE_ERROR_ARGUMENT;
  std::lock_guard<std::mutex> guard(w->lock);
  *json = nullptr;
  whale::PlanQuery query;
  query.cluster = cluster;
  if (profile)
    query.profile = profile;
  std::string text, error;
  if (!whale::simulationJson(*w->interp, query, text, error))
    return w->outcome(error);
  *json = whale::capi::newString(text);
  return w->outcome(*json ? "" : "out of memory");
}

whale_status whale_interp_train(whale_interp *w, const char *cluster,
                                long long steps, const char *metrics,
                                double *final_loss) {
  return trainLoaded(w, cluster, steps, metrics, /*processes=*/false, nullptr,
                     final_loss);
}

whale_status whale_interp_train_mpi(whale_interp *w, const char *cluster,
                                    long long steps, const char *metrics,
                                    const void *mpi_comm, double *final_loss) {
  return trainLoaded(w, cluster, steps, metrics, /*processes=*/true, mpi_comm,
                     final_loss);
}

} // extern "C"
