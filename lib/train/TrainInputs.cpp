//===- TrainInputs.cpp - what a run reads, never to be written over -------===//
//
// The files a run reads: the script and the modules it imports, the
// checkpoint it loads, its data (training and held-out) and the cluster
// file (the CLI adds its elastic schedule). No output of the run may be one of
// them (issue 92 item 1): a metrics line appended to the script, or a trace
// written over the checkpoint, destroys what the user asked to read.
//
//===----------------------------------------------------------------------===//

#include "whale/Train.h"

#include "lib/compile/DataSpec.h"
#include "lib/compile/ModelLookup.h"
#include "runtime/checkpoint/Checkpoint.h"
#include "support/OutputFile.h"

#include <sys/stat.h>

namespace whale {
namespace {

bool isFile(const std::string &path) {
  struct stat st;
  return !path.empty() && ::stat(path.c_str(), &st) == 0 &&
         !S_ISDIR(st.st_mode);
}

} // namespace

std::vector<std::string> filesTrainReads(Interpreter &interp,
                                         const TrainOptions &options) {
  std::vector<std::string> files = interp.filesRead();
  auto add = [&](const std::string &path) {
    if (isFile(path))
      files.push_back(path);
  };
  if (!options.loadPath.empty()) {
    std::string error;
    add(options.loadPath);
    add(checkpointFile(options.loadPath, /*saving=*/false, error));
  }
  add(options.cluster); // a cluster file (a spec names no file)
  std::string error;
  if (mlir::func::FuncOp fn = findModel(interp, options.model, false, error))
    for (const char *key : {"data", "eval_data"}) {
      DataSpec spec;
      if (dataSpecOf(fn, key, spec, error))
        for (const std::string &p : {spec.path, spec.features, spec.labels})
          add(p);
    }
  return files;
}

std::string checkOutputsAgainstInputs(
    const std::vector<std::pair<std::string, std::string>> &outputs,
    const std::vector<std::string> &inputs) {
  for (const auto &[flag, path] : outputs) {
    if (path.empty())
      continue;
    for (const std::string &input : inputs)
      if (rt::sameFile(path, input))
        return flag + " '" + path + "' is '" + input +
               "', which this run reads; write it elsewhere";
  }
  return "";
}

} // namespace whale
