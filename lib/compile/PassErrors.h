//===- PassErrors.h - what passes report, gathered for the user -*- C++ -*-===//
//
// The one way a pass's errors reach a user: while a PassErrors lives, every
// error diagnostic of its context is kept with its place in the script
// (planning, the lowering to the runtime, the train step, `--emit`). The
// library never prints them; its callers hand them on.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_COMPILE_PASSERRORS_H
#define WHALE_LIB_COMPILE_PASSERRORS_H

#include "mlir/IR/Diagnostics.h"

#include <string>
#include <vector>

namespace whale {

class PassErrors {
public:
  /// One error: where in the script (file empty where the IR has no
  /// place) and what.
  struct Error {
    std::string file;
    unsigned line = 0, column = 0;
    std::string message;
  };

  explicit PassErrors(mlir::MLIRContext *context);

  const std::vector<Error> &errors() const { return gathered; }
  /// Each error as `file:line:col: error: message`, one a line; `fallback`
  /// where none was reported.
  std::string text(const std::string &fallback) const;

private:
  std::vector<Error> gathered;
  mlir::ScopedDiagnosticHandler handler;
};

} // namespace whale

#endif // WHALE_LIB_COMPILE_PASSERRORS_H
