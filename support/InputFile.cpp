//===- InputFile.cpp - reading a file a user named, safely ----------------===//

#include "support/InputFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace whale::rt {

namespace {

std::string kindOf(mode_t mode) {
  if (S_ISDIR(mode))
    return "it is a folder";
  if (S_ISFIFO(mode))
    return "it is a FIFO";
  if (S_ISCHR(mode) || S_ISBLK(mode))
    return "it is a device";
  if (S_ISSOCK(mode))
    return "it is a socket";
  return "it is not a regular file";
}

std::string failure(const std::string &path, const char *what,
                    const std::string &reason) {
  return std::string("cannot read ") + what + " '" + path + "': " + reason;
}

/// Reads regular file `path` into `out` (a std::string or a byte vector).
template <typename Buffer>
std::string readInto(const std::string &path, const char *what,
                     uint64_t maxBytes, Buffer &out) {
  out.clear();
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is then
  // refused below by its kind.
  int fd = ::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (fd < 0)
    return failure(path, what, std::strerror(errno));
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  struct stat st;
  if (::fstat(fd, &st) != 0)
    return failure(path, what, std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    return failure(path, what, kindOf(st.st_mode));
  if (static_cast<uint64_t>(st.st_size) > maxBytes)
    return failure(path, what,
                   "it is " + std::to_string(st.st_size) +
                       " bytes, more than the " + std::to_string(maxBytes) +
                       " allowed");
  // Read to the end rather than to st_size: files under /proc say 0 bytes
  // and have more, and a file may grow while read. The bound still holds.
  size_t have = 0;
  out.resize(static_cast<size_t>(st.st_size) + 1);
  for (;;) {
    if (have == out.size()) {
      if (out.size() > maxBytes)
        return failure(path, what,
                       "it is more than the " + std::to_string(maxBytes) +
                           " bytes allowed");
      out.resize(std::min<uint64_t>(out.size() * 2 + 4096, maxBytes + 1));
    }
    ssize_t n = ::read(fd, reinterpret_cast<char *>(out.data()) + have,
                       out.size() - have);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0)
      return failure(path, what, std::strerror(errno));
    if (n == 0)
      break;
    have += static_cast<size_t>(n);
  }
  if (have > maxBytes)
    return failure(path, what,
                   "it is more than the " + std::to_string(maxBytes) +
                       " bytes allowed");
  out.resize(have);
  return "";
}

} // namespace

std::string readRegularFile(const std::string &path, const char *what,
                            uint64_t maxBytes, std::string &out) {
  return readInto(path, what, maxBytes, out);
}

std::string readRegularFile(const std::string &path, const char *what,
                            uint64_t maxBytes, std::vector<uint8_t> &out) {
  return readInto(path, what, maxBytes, out);
}

bool jsonDepthWithin(std::string_view text, int maxDepth) {
  int depth = 0;
  bool inString = false, escaped = false;
  for (char c : text) {
    if (inString) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        inString = false;
      continue;
    }
    if (c == '"')
      inString = true;
    else if (c == '{' || c == '[') {
      if (++depth > maxDepth)
        return false;
    } else if (c == '}' || c == ']')
      --depth;
  }
  return true;
}

} // namespace whale::rt
