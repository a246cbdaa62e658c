//===- OutputFile.h - writing a file whole, or not at all --------*- C++ -*-===//
//
// Every file Whale writes for a user (a checkpoint, a trace, compiled IR, a
// cluster or profile file) appears whole or not at all: written to a
// temporary beside it, synced and renamed into place, so the old contents
// stay until the new are complete and a crash or a full disk never leaves
// a fragment. A failure is an error that names the file, never a silent
// 0-byte file.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_SUPPORT_OUTPUTFILE_H
#define WHALE_SUPPORT_OUTPUTFILE_H

#include <string>
#include <string_view>
#include <vector>

namespace whale::rt {

/// Writes `parts`, one after another, to `path`. A regular file (or a new
/// one) goes through a temporary beside it (`PATH.tmpPID`), synced and
/// renamed, and removed when anything fails; a device such as /dev/null or
/// /dev/full is written directly; a folder is refused. "" on success, else
/// "cannot write WHAT 'PATH': REASON".
std::string writeFileWhole(const std::string &path, const char *what,
                           const std::vector<std::string_view> &parts);

/// Removes the temporary of a write in progress, if any: for a signal
/// handler ending the process in the middle of a save (async-signal-safe).
/// A temporary left by a process killed outright is removed by the next
/// write of the same file.
void removeTemporaryInProgress();

/// writeFileWhole of one string.
std::string writeOutputFile(const std::string &path, const std::string &text,
                            const char *what);

/// "" when `path` can be made: it is not an existing folder, and its
/// folder exists and takes a new file (the write's temporary is made and
/// removed). Checked before a long run, not after it.
std::string checkOutputPath(const std::string &path, const char *what);

/// "" when the folder `path` would be made in exists and takes a new file
/// (a probe is made and removed): checked before a long run for a file or
/// a folder at `path`.
std::string checkFolderTakesFiles(const std::string &path, const char *what);

/// Whether `a` and `b` name the same existing file (an output that would
/// overwrite an input).
bool sameFile(const std::string &a, const std::string &b);

} // namespace whale::rt

#endif
