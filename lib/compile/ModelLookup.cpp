//===- ModelLookup.cpp - the model a command works on ---------------------===//

#include "lib/compile/ModelLookup.h"

namespace whale {

mlir::func::FuncOp findModel(Interpreter &interp, const std::string &name,
                             bool needsTrainBlock, std::string &error) {
  mlir::ModuleOp module = interp.module();
  if (!module) {
    error = "the program did not compile";
    return nullptr;
  }
  mlir::func::FuncOp model;
  module.walk([&](mlir::func::FuncOp fn) {
    bool trains = fn->hasAttr("whale.train");
    if (!model && fn->hasAttr("whale.model") &&
        (name.empty() ? trains : fn.getName() == name) &&
        (trains || !needsTrainBlock))
      model = fn;
  });
  if (!model)
    error = name.empty()      ? "the program has no train block"
            : needsTrainBlock ? "no model '" + name + "' with a train block"
                              : "no model '" + name + "'";
  return model;
}

} // namespace whale
