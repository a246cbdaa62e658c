//===- ClusterView.h - the devices as the planning passes see them -*- C++
//-*-===//
//
// The planner writes the cluster onto the module as `whale.cluster`
// {flops = array<f64: ...>, memory = array<i64: ...>, models = [...]}:
// each device's compute rate (FLOP/s), memory limit (bytes, 0 for none)
// and, for a GPU the simulator knows by its data sheet, its model name
// ("" for a device described by its rate alone), by rank.
// Hand-written IR may carry it too. Without it every device is alike and
// unlimited, and the passes plan as they did before balancing existed.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_CLUSTERVIEW_H
#define WHALE_LOWERING_CLUSTERVIEW_H

#include "mlir/IR/BuiltinOps.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"

#include <string>

#include <limits>

namespace whale::plan {

struct ClusterView {
  llvm::SmallVector<double> flops;   ///< per device; all 1 when not given
  llvm::SmallVector<int64_t> memory; ///< per device; 0: no limit
  /// per device: a data sheet's name (perfmodel/DeviceModel.h), or empty
  llvm::SmallVector<std::string> models;

  double rate(int64_t d) const { return d < (int64_t)flops.size() ? flops[d] : 1; }
  llvm::StringRef model(int64_t d) const {
    return d < (int64_t)models.size() ? llvm::StringRef(models[d]) : "";
  }
  int64_t limit(int64_t d) const {
    return d < (int64_t)memory.size() ? memory[d] : 0;
  }
  /// A limit as a number to compare: no limit is the most memory.
  double room(int64_t d) const {
    int64_t l = limit(d);
    return l > 0 ? double(l) : std::numeric_limits<double>::infinity();
  }
  /// Whether devices differ in rate or memory (an even plan is then not
  /// the only sensible one).
  bool uneven() const {
    for (size_t i = 1; i < flops.size(); ++i)
      if (flops[i] != flops[0])
        return true;
    for (size_t i = 1; i < memory.size(); ++i)
      if (memory[i] != memory[0])
        return true;
    return false;
  }
};

/// The cluster of the module around `op`, for `devices` devices.
inline ClusterView clusterOf(mlir::Operation *op, int64_t devices) {
  ClusterView view;
  view.flops.assign(devices, 1.0);
  view.memory.assign(devices, 0);
  auto module = llvm::isa<mlir::ModuleOp>(op)
                    ? llvm::cast<mlir::ModuleOp>(op)
                    : op->getParentOfType<mlir::ModuleOp>();
  auto dict = module ? module->getAttrOfType<mlir::DictionaryAttr>(
                           "whale.cluster")
                     : mlir::DictionaryAttr();
  if (!dict)
    return view;
  if (auto f = dict.getAs<mlir::DenseF64ArrayAttr>("flops"))
    for (int64_t d = 0; d < devices && d < f.size(); ++d)
      view.flops[d] = f[d];
  if (auto m = dict.getAs<mlir::DenseI64ArrayAttr>("memory"))
    for (int64_t d = 0; d < devices && d < m.size(); ++d)
      view.memory[d] = m[d];
  if (auto names = dict.getAs<mlir::ArrayAttr>("models"))
    for (int64_t d = 0; d < devices && d < int64_t(names.size()); ++d)
      if (auto name = llvm::dyn_cast<mlir::StringAttr>(names[d])) {
        view.models.resize(devices);
        view.models[d] = name.str();
      }
  return view;
}

} // namespace whale::plan

#endif
