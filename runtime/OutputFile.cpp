//===- OutputFile.cpp - writing a file whole, or not at all ---------------===//

#include "runtime/OutputFile.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace whale::rt {

namespace {

std::string failure(const std::string &path, const char *what,
                    const std::string &reason) {
  return std::string("cannot write ") + what + " '" + path + "': " + reason;
}

/// Writes every part to `fd`; 0, else the errno of the failure.
int writeAll(int fd, const std::vector<std::string_view> &parts) {
  for (std::string_view part : parts) {
    const char *p = part.data();
    size_t left = part.size();
    while (left > 0) {
      ssize_t n = ::write(fd, p, left);
      if (n < 0 && errno == EINTR)
        continue;
      if (n <= 0)
        return n < 0 ? errno : EIO;
      p += n;
      left -= static_cast<size_t>(n);
    }
  }
  return 0;
}

} // namespace

std::string writeFileWhole(const std::string &path, const char *what,
                           const std::vector<std::string_view> &parts) {
  struct stat st;
  bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode))
    return failure(path, what, "it is a folder");
  if (exists && !S_ISREG(st.st_mode)) {
    // A device or a pipe: no rename possible, the write itself must work.
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0)
      return failure(path, what, std::strerror(errno));
    int error = writeAll(fd, parts);
    if (::close(fd) != 0 && !error)
      error = errno;
    return error ? failure(path, what, std::strerror(error)) : "";
  }
  std::string tmp = path + ".tmp" + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                  exists ? (st.st_mode & 07777) : 0644);
  if (fd < 0)
    return failure(path, what, std::strerror(errno));
  int error = writeAll(fd, parts);
  // Synced before the rename: after a crash the name holds the old file or
  // the whole new one, never a prefix.
  if (!error && ::fsync(fd) != 0)
    error = errno;
  if (::close(fd) != 0 && !error)
    error = errno;
  if (!error && std::rename(tmp.c_str(), path.c_str()) != 0)
    error = errno;
  if (error) {
    ::unlink(tmp.c_str());
    return failure(path, what, std::strerror(error));
  }
  return "";
}

} // namespace whale::rt
