//===- PassErrors.cpp - what passes report, gathered for the user ---------===//

#include "lib/compile/PassErrors.h"

#include "mlir/IR/Location.h"

namespace whale {

namespace {
/// The script position a location names, through call sites and fused
/// locations to the first file position in it.
mlir::FileLineColLoc filePositionOf(mlir::Location loc) {
  mlir::FileLineColLoc found;
  loc->walk([&](mlir::Location inner) {
    if (auto f = mlir::dyn_cast<mlir::FileLineColLoc>(inner)) {
      found = f;
      return mlir::WalkResult::interrupt();
    }
    return mlir::WalkResult::advance();
  });
  return found;
}
} // namespace

PassErrors::PassErrors(mlir::MLIRContext *context)
    : handler(context, [this](mlir::Diagnostic &d) {
        // Warnings and remarks are not failures; notes belong to an error.
        if (d.getSeverity() != mlir::DiagnosticSeverity::Error)
          return mlir::success();
        Error e;
        if (mlir::FileLineColLoc at = filePositionOf(d.getLocation())) {
          e.file = at.getFilename().str();
          e.line = at.getLine();
          e.column = at.getColumn();
        }
        e.message = d.str();
        gathered.push_back(std::move(e));
        return mlir::success();
      }) {}

std::string PassErrors::text(const std::string &fallback) const {
  if (gathered.empty())
    return fallback;
  std::string out;
  for (const Error &e : gathered) {
    if (!out.empty())
      out += "\n";
    if (!e.file.empty())
      out += e.file + ":" + std::to_string(e.line) + ":" +
             std::to_string(e.column) + ": ";
    out += "error: " + e.message;
  }
  return out;
}

} // namespace whale
