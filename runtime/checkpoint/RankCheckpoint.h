//===- RankCheckpoint.h - a plan's state as one file per rank -----*- C++
//-*-===//
//
// How large runs keep checkpoints: each rank writes the boxes it holds,
// `rank-NNNNN.safetensors` in a folder, each tensor at its box's shape with
// the box, the whole shape and a CRC-32 of its bytes in the metadata
// (`whale.box.NAME` = "offsets;sizes", `whale.shape.NAME`,
// `whale.crc32.NAME`): a damaged file is found and never used. Read back, the
// folder is a state collection with its boxes, so loading under any plan is a
// reshard from it (runtime/state/Reshard.h), with no gather of the whole state
// anywhere. The single-file checkpoint (runtime/checkpoint/Checkpoint.h) reads
// as a collection of one rank holding every tensor whole.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CHECKPOINT_RANKCHECKPOINT_H
#define WHALE_RUNTIME_CHECKPOINT_RANKCHECKPOINT_H

#include "runtime/state/Reshard.h"
#include "runtime/store/Safetensors.h"

#include <cstdint>
#include <set>
#include <string>

namespace whale {

struct StateCheckpoint {
  std::string model;
  int64_t nextStep = 0;
  uint64_t seed = 0;
  /// Which save the files are of: every rank file of one save carries the
  /// same id, so files of two saves or two runs never load together.
  std::string setId;
  StateCollection layout;
  HeldState held;
};

/// Whether `path` is a folder of rank files (any of them: a folder missing
/// rank 0's is one, which loading refuses as incomplete). A set a crash
/// left at `PATH.previous` is taken back first (rt::recoverCheckpointSet).
bool isRankCheckpoint(const std::string &path);

/// A fresh id for one save's rank files.
std::string newCheckpointSetId();

/// Writes every rank's boxes of `ckpt.layout` (all of `ckpt.held`) into
/// `dir` as one unit (rt/store/CheckpointSet.h): the folder holds the old
/// set or the whole new one, whatever stops the save. "" on success.
std::string saveRankCheckpoint(const std::string &dir,
                               const StateCheckpoint &ckpt);

/// The rank files alone, into `folder` (a staging folder), tagged `setId`:
/// those of the ranks in `only`, or all when it is empty. Under mpirun each
/// process writes its own ranks' files, and process 0 commits the set once
/// all have written.
std::string writeRankFiles(const std::string &folder,
                           const StateCheckpoint &ckpt,
                           const std::string &setId,
                           const std::set<int64_t> &only);

/// Reads a folder of rank files, or a single-file checkpoint; every box is
/// checked against its file's data and the whole shape; "" on success.
/// With `only`, every rank file's header makes the layout, but the data
/// (into `out.held`) is read, and checked, from the ranks in `only` alone:
/// a process reads what its own new ranks need, not the whole state. A
/// single file is read whole.
std::string loadStateCheckpoint(const std::string &path, StateCheckpoint &out,
                                const std::set<int64_t> *only = nullptr);

/// The f32 tensors of a checkpoint, each whole, under their names, with the
/// model's name as metadata "model": a single file's (bf16 and fp16
/// widened), or a folder of rank files' put together from the ranks' boxes
/// (every element must be held by some rank). What `whale export` reads.
std::string loadWholeTensors(const std::string &path, rt::Checkpoint &out);

} // namespace whale

#endif
