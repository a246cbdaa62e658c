//===- WhaleClusterAttrs.cpp - #whale.cluster and #whale.device -----------===//
//
// The checks of the devices a plan is for
// (lowering/Transforms/Parallel/ClusterView.h reads them): each value a
// device's description may take.
//
//===----------------------------------------------------------------------===//

#include "dialects/Whale/IR/WhaleOps.h"

#include <cmath>

using namespace mlir;
using namespace whale;

LogicalResult DeviceAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                 FloatAttr rate, int64_t memory, bool gpu,
                                 int64_t threads, StringRef model, int64_t sms,
                                 int64_t contexts, FloatAttr share,
                                 FloatAttr bandwidth) {
  const double flops = rate ? rate.getValueAsDouble() : 0;
  if (!(flops > 0) || !std::isfinite(flops))
    return emitError() << "a device's rate must be positive, got " << flops;
  if (memory < 0)
    return emitError() << "a device's memory limit must not be negative, got "
                       << memory;
  if (threads < 1)
    return emitError() << "a device runs with at least one thread, got "
                       << threads;
  if (sms < 0)
    return emitError() << "a device's share of its GPU is a count of SMs "
                          "(0: the whole GPU), got "
                       << sms;
  if (contexts < 1)
    return emitError() << "the contexts on a device's GPU count itself (1: a "
                          "GPU of its own), got "
                       << contexts;
  if (share) {
    const double s = share.getValueAsDouble();
    if (!(s > 0 && s <= 1))
      return emitError() << "a CPU device's share of its cores is in (0, 1], "
                            "got "
                         << s;
    if (gpu || !model.empty())
      return emitError() << "a share of cores' time is a CPU device's; a "
                            "GPU's share is its SMs (sms)";
  }
  if (bandwidth && !(bandwidth.getValueAsDouble() > 0 &&
                     std::isfinite(bandwidth.getValueAsDouble())))
    return emitError() << "a device's memory bandwidth must be positive, got "
                       << bandwidth.getValueAsDouble();
  return success();
}

LogicalResult ClusterAttr::verify(function_ref<InFlightDiagnostic()> emitError,
                                  ArrayRef<DeviceAttr> devices) {
  if (devices.empty())
    return emitError() << "a cluster has at least one device";
  return success();
}
