//===- OutputFile.cpp - writing the files a user asked for ----------------===//

#include "lib/OutputFile.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

namespace whale {

namespace {

std::string failure(const std::string &path, const char *what, int error) {
  return std::string("cannot write ") + what + " '" + path +
         "': " + std::strerror(error);
}

/// Writes all of `text` to `fd`; 0, else the errno of the failure.
int writeAll(int fd, const std::string &text) {
  const char *p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n <= 0)
      return n < 0 ? errno : EIO;
    p += n;
    left -= static_cast<size_t>(n);
  }
  return 0;
}

} // namespace

std::string writeOutputFile(const std::string &path, const std::string &text,
                            const char *what) {
  struct stat st;
  bool exists = ::stat(path.c_str(), &st) == 0;
  if (exists && S_ISDIR(st.st_mode))
    return std::string("cannot write ") + what + " '" + path +
           "': it is a folder";
  if (exists && !S_ISREG(st.st_mode)) {
    // A device or a pipe: no rename possible, the write itself must work.
    int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0)
      return failure(path, what, errno);
    int error = writeAll(fd, text);
    if (::close(fd) != 0 && !error)
      error = errno;
    return error ? failure(path, what, error) : "";
  }
  std::string tmp = path + ".tmp" + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
                  exists ? (st.st_mode & 07777) : 0644);
  if (fd < 0)
    return failure(path, what, errno);
  int error = writeAll(fd, text);
  if (!error && ::fsync(fd) != 0)
    error = errno;
  if (::close(fd) != 0 && !error)
    error = errno;
  if (!error && std::rename(tmp.c_str(), path.c_str()) != 0)
    error = errno;
  if (error) {
    ::unlink(tmp.c_str());
    return failure(path, what, error);
  }
  return "";
}

std::string checkOutputPath(const std::string &path, const char *what) {
  if (llvm::sys::fs::is_directory(path))
    return std::string("cannot write ") + what + " '" + path +
           "': it is a folder";
  llvm::StringRef folder = llvm::sys::path::parent_path(path);
  if (!folder.empty() && !llvm::sys::fs::is_directory(folder))
    return std::string("cannot write ") + what + " '" + path +
           "': the folder '" + folder.str() + "' does not exist";
  return "";
}

bool sameFile(const std::string &a, const std::string &b) {
  bool same = false;
  return !llvm::sys::fs::equivalent(a, b, same) && same;
}

} // namespace whale
