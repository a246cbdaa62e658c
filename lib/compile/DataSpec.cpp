//===- DataSpec.cpp - a train block's data spec off the model -------------===//

#include "lib/compile/DataSpec.h"

#include "dialects/Whale/IR/TrainAttrs.h"
#include "dialects/Whale/IR/WhaleOps.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace whale {
namespace {

/// A relative data path names a file beside the script, so a script runs the
/// same from any working folder; a script given as a string (no file) keeps
/// the path as written.
std::string scriptRelative(mlir::func::FuncOp model, const std::string &path) {
  if (path.empty() || llvm::sys::path::is_absolute(path))
    return path;
  auto loc = mlir::dyn_cast<mlir::FileLineColLoc>(model.getLoc());
  if (!loc)
    return path;
  llvm::StringRef script = loc.getFilename().getValue();
  llvm::StringRef folder = llvm::sys::path::parent_path(script);
  if (folder.empty() || !llvm::sys::fs::exists(script))
    return path;
  llvm::SmallString<256> full(folder);
  llvm::sys::path::append(full, path);
  return full.str().str();
}

} // namespace

bool tensorSpecOf(mlir::Type type, TensorSpec &out, std::string &error) {
  auto t = mlir::dyn_cast<mlir::RankedTensorType>(type);
  mlir::Type e = t ? t.getElementType() : mlir::Type();
  if (!e || !(e.isF32() || e.isInteger(32))) {
    error = "inputs are f32 or i32 tensors for now";
    return false;
  }
  out.dtype = e.isF32() ? WHALE_RT_F32 : WHALE_RT_I32;
  out.shape.assign(t.getShape().begin(), t.getShape().end());
  return true;
}

bool dataSpecOf(mlir::func::FuncOp model, const char *key, DataSpec &out,
                std::string &error) {
  const TrainBlock train = TrainBlock::of(model);
  mlir::DictionaryAttr data =
      llvm::StringRef(key) == "eval_data" ? train.evalData : train.data;
  out = DataSpec();
  out.kind = text(data, "kind");
  if (out.kind.empty())
    out.kind = "synthetic";
  out.batch = static_cast<int64_t>(number(data, "batch", 1));
  out.seed = static_cast<uint64_t>(number(data, "seed", 0));
  out.seq = static_cast<int64_t>(number(data, "seq", 1));
  out.dtype = text(data, "dtype");
  out.path = scriptRelative(model, text(data, "path"));
  out.features = scriptRelative(model, text(data, "features"));
  out.labels = scriptRelative(model, text(data, "labels"));
  for (mlir::Type t : model.getArgumentTypes()) {
    out.inputs.emplace_back();
    if (!tensorSpecOf(t, out.inputs.back(), error))
      return false;
  }
  if (model.getNumArguments() == 2)
    model.walk([&](CrossEntropyOp ce) {
      if (ce.getLabels() == model.getArgument(1))
        out.classes = ce.getLogits().getType().getShape().back();
    });
  return true;
}

std::unique_ptr<DataSource>
makeDataSource(mlir::func::FuncOp model, std::string &error, const char *key) {
  DataSpec spec;
  if (!dataSpecOf(model, key, spec, error))
    return nullptr;
  return openDataSource(spec, error);
}

} // namespace whale
