//===- DeviceAttr.cpp - a device's description in and out of the IR -----===//

#include "perfmodel/DeviceAttr.h"

using namespace whale;

DeviceAttr perf::deviceAttrOf(mlir::MLIRContext *ctx,
                              const DeviceDescription &d) {
  return DeviceAttr::get(
      ctx, mlir::FloatAttr::get(mlir::Float64Type::get(ctx), rateOf(d)),
      d.memory, d.gpu, d.threads, d.model, d.sms, d.contexts,
      d.cpuShare < 1
          ? mlir::FloatAttr::get(mlir::Float64Type::get(ctx), d.cpuShare)
          : mlir::FloatAttr(),
      d.memoryBandwidth > 0
          ? mlir::FloatAttr::get(mlir::Float64Type::get(ctx), d.memoryBandwidth)
          : mlir::FloatAttr());
}

perf::DeviceDescription perf::describeDevice(DeviceAttr attr) {
  DeviceDescription out;
  out.flops = attr.getFlops().getValueAsDouble();
  out.memory = attr.getMemory();
  out.threads = static_cast<int>(attr.getThreads());
  out.model = attr.getModel().str();
  out.sms = static_cast<int>(attr.getSms());
  out.contexts = static_cast<int>(attr.getContexts());
  out.gpu = attr.getGpu() || !out.model.empty();
  if (mlir::FloatAttr share = attr.getShare())
    out.cpuShare = share.getValueAsDouble();
  if (mlir::FloatAttr bandwidth = attr.getBandwidth())
    out.memoryBandwidth = bandwidth.getValueAsDouble();
  return out;
}
