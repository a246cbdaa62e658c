//===- DeviceAttr.h - a device's description as the IR carries it --*- C++
//-*-===//
//
// A device is described once, by perf::DeviceDescription (DeviceSpeed.h):
// the cluster's DeviceSpec is one with its place, and #whale.device is the
// same fields in the IR (`whale.cluster`, written by the planner, read by
// the planning passes). These two functions are the only crossing between
// them, so a field added to the description is added here and in the
// attribute's parameters, nowhere else. perf::DeviceModel is not a fourth
// description: it is what the description implies (rates, bandwidth,
// units), derived by deviceModelOf.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_PERFMODEL_DEVICEATTR_H
#define WHALE_PERFMODEL_DEVICEATTR_H

#include "dialects/Whale/IR/WhaleOps.h"
#include "perfmodel/DeviceSpeed.h"

namespace whale::perf {

/// `d` as the IR carries it. Its rate is the one it is balanced by
/// (rateOf: declared, measured or nominal), so every pass reads the same.
DeviceAttr deviceAttrOf(mlir::MLIRContext *ctx, const DeviceDescription &d);

/// The description `attr` carries. A device named by its data sheet is a
/// GPU.
DeviceDescription describeDevice(DeviceAttr attr);

} // namespace whale::perf

#endif
