//===- CheckpointSet.h - a checkpoint folder replaced as one unit -*- C++
//-*-===//
//
// A checkpoint folder (a rank file per rank, or one checkpoint.safetensors)
// is replaced whole at every save: the new set is written into a staging
// folder beside it (`DIR.saving`), then swapped with DIR in one atomic
// rename (renameat2 RENAME_EXCHANGE), and the old set removed. A kill, a
// full disk or a failed process anywhere before the swap leaves DIR as it
// was, a loadable set; after it, DIR is the whole new set. Nothing ever
// mixes files of two sets.
//
// Where the file system cannot exchange two names (EINVAL), the swap is
// two renames through `DIR.previous`; a crash between them leaves DIR
// missing and the old set there, which loading and the next save both
// take back (recoverCheckpointSet).
//
// Only a folder that holds checkpoint files is ever replaced: one with
// anything else in it (a user's other files, `--save .`) is refused before
// anything is written. A compiled plan's folder (`whale compile
// --emit=bundle -o DIR`) is replaced the same way, holding its own files.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CHECKPOINT_CHECKPOINTSET_H
#define WHALE_RUNTIME_CHECKPOINT_CHECKPOINTSET_H

#include <string>

namespace whale::rt {

/// What a folder replaced whole holds.
enum class FolderKind {
  Checkpoint,   ///< rank-NNNNN.safetensors, checkpoint.safetensors
  CompiledPlan, ///< plan.json, *.so (and a killed compile's *.o)
};

/// Where a new set for `dir` is written before it replaces `dir`.
std::string stagingFolder(const std::string &dir);

/// "" when `dir` may be replaced by a set of `kind`: it does not exist, or
/// it is a folder that holds nothing but files of that kind (and the
/// temporaries of their writes). Checked before a run starts, and again at
/// each save.
std::string checkReplaceableFolder(const std::string &dir,
                                   FolderKind kind = FolderKind::Checkpoint);

/// Takes back a set a crash left at `DIR.previous` while DIR is missing;
/// "" when DIR is (now) where it should be or never existed.
/// A folder there that a save did not make (a user's, holding other
/// files) is never taken: the error says so.
std::string recoverCheckpointSet(const std::string &dir,
                                 FolderKind kind = FolderKind::Checkpoint);

/// Makes an empty staging folder for `dir`, removing what an interrupted
/// save left there; "" on success.
std::string beginCheckpointSet(const std::string &dir,
                               FolderKind kind = FolderKind::Checkpoint);

/// Replaces `dir` by its staging folder in one step and removes the old
/// set; "" on success. On failure `dir` is as it was.
std::string commitCheckpointSet(const std::string &dir);

/// Removes the staging folder of a save that failed (best effort).
void abandonCheckpointSet(const std::string &dir);

} // namespace whale::rt

#endif
