//===- OutputFile.h - writing the files a user asked for ---------*- C++
//-*-===//
//
// A file Whale writes for a user either appears whole or not at all, and a
// write that fails (a full disk, a missing folder, a read-only device) is
// an error of the command, never a silent 0-byte file with exit status 0.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_OUTPUTFILE_H
#define WHALE_LIB_OUTPUTFILE_H

#include <string>

namespace whale {

/// Writes `text` to `path` whole or not at all (rt::writeFileWhole, as
/// checkpoints are written); "" on success, else "cannot write WHAT 'PATH':
/// REASON".
std::string writeOutputFile(const std::string &path, const std::string &text,
                            const char *what);

/// "" when `path` can be made: its folder exists and it is not an existing
/// folder. Checked before a long run, not after it.
std::string checkOutputPath(const std::string &path, const char *what);

/// Whether `a` and `b` name the same existing file (an output that would
/// overwrite an input).
bool sameFile(const std::string &a, const std::string &b);

} // namespace whale

#endif
