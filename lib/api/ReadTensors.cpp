//===- ReadTensors.cpp - a checkpoint's tensors for a host ----------------===//
//
// whale::readTensors: the checkpoint reader loads use (runtime/store/
// Safetensors.h, its checks and checksums), for a host that wants the
// arrays themselves (Python's whale.load).
//
//===----------------------------------------------------------------------===//

#include "whale/Train.h"

#include "runtime/checkpoint/Checkpoint.h"
#include "runtime/checkpoint/RankCheckpoint.h"
#include "runtime/store/Safetensors.h"

namespace whale {

bool readTensors(const std::string &path, std::vector<StoredArray> &out,
                 std::string &error) {
  if (isRankCheckpoint(path)) {
    error = "'" + path +
            "' is a folder of rank files: they load into a run "
            "(train with it as the checkpoint to load), which reshards them";
    return false;
  }
  const std::string file = checkpointFile(path, /*saving=*/false, error);
  if (file.empty())
    return false;
  rt::Checkpoint ckpt;
  if (rt::Status st = rt::readSafetensors(file, ckpt); !st) {
    error = st.message();
    return false;
  }
  rt::widenFloatTensors(ckpt);
  out.clear();
  for (rt::StoredTensor &t : ckpt.tensors) {
    StoredArray a;
    a.info.name = t.name;
    a.info.shape = t.shape;
    if (t.dtype == "F32")
      a.info.dtype = "f32";
    else if (t.dtype == "I32")
      a.info.dtype = "i32";
    else if (t.dtype == "I64")
      a.info.dtype = "i64";
    else {
      error = "'" + file + "': tensor '" + t.name + "' is " + t.dtype +
              ", which a host reads as f32, i32 or i64 only";
      return false;
    }
    a.bytes = std::move(t.data);
    out.push_back(std::move(a));
  }
  return true;
}

} // namespace whale
