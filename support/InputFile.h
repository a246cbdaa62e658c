//===- InputFile.h - reading a file a user named, safely ---------*- C++
//-*-===//
//
// Every file Whale reads because a user named it (a script, a cluster or
// profile file, a checkpoint, text data, a schedule) comes through here, so
// each gets the same checks: only a regular file is read (a folder, a FIFO,
// a device such as /dev/zero or /dev/urandom, a socket would fail, block or
// never end), reads stop at a size bound, and every failure is a message
// that names the file and what it was for.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_SUPPORT_INPUTFILE_H
#define WHALE_SUPPORT_INPUTFILE_H

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace whale::rt {

/// Bounds for the files users name (each far above any real one).
inline constexpr uint64_t kMaxTextInput = uint64_t(256) << 20; // 256 MiB
inline constexpr uint64_t kMaxDataInput = uint64_t(4) << 30;   // 4 GiB
inline constexpr uint64_t kMaxCheckpoint = uint64_t(1) << 43;  // 8 TiB

/// The whole of regular file `path`, at most `maxBytes`, into `out`; ""
/// on success, else why not, as "cannot read WHAT 'PATH': REASON".
std::string readRegularFile(const std::string &path, const char *what,
                            uint64_t maxBytes, std::string &out);
std::string readRegularFile(const std::string &path, const char *what,
                            uint64_t maxBytes, std::vector<uint8_t> &out);

/// Whether JSON `text` nests objects and arrays at most `maxDepth` deep.
/// Checked before a recursive parser sees the text, so a deeply nested
/// file is an error rather than a stack overflow. Strings are skipped.
bool jsonDepthWithin(std::string_view text, int maxDepth);
inline constexpr int kMaxJsonDepth = 64;

} // namespace whale::rt

#endif
