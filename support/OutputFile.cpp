//===- OutputFile.cpp - writing a file whole, or not at all ---------------===//

#include "support/OutputFile.h"

#include <atomic>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fcntl.h>
#include <string_view>
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

/// The temporary being written, for a signal handler to remove: a fixed
/// buffer and a flag, which is all a handler may read. One at a time (the
/// first writer takes the slot; a checkpoint is written by one thread).
char inProgress[4096];
std::atomic<int> slot{0}; // 0 free, 1 being set, 2 holds a path
static_assert(std::atomic<int>::is_always_lock_free,
              "read from a signal handler");

bool holdSlot(const std::string &tmp) {
  int expected = 0;
  if (tmp.size() >= sizeof inProgress ||
      !slot.compare_exchange_strong(expected, 1))
    return false;
  std::memcpy(inProgress, tmp.c_str(), tmp.size() + 1);
  slot.store(2);
  return true;
}

/// Removes `PATH.tmpPID` files that a process killed outright (SIGKILL, a
/// power cut) left beside `path`: those of processes no longer running.
void removeDeadTemporaries(const std::string &path) {
  const size_t slash = path.rfind('/');
  const std::string folder =
      slash == std::string::npos ? "." : path.substr(0, slash + 1);
  const std::string prefix =
      (slash == std::string::npos ? path : path.substr(slash + 1)) + ".tmp";
  DIR *dir = ::opendir(folder.c_str());
  if (!dir)
    return;
  const pid_t self = ::getpid();
  while (const dirent *entry = ::readdir(dir)) {
    std::string_view name(entry->d_name);
    if (name.size() <= prefix.size() || name.substr(0, prefix.size()) != prefix)
      continue;
    std::string_view digits = name.substr(prefix.size());
    if (digits.size() > 9 ||
        digits.find_first_not_of("0123456789") != std::string_view::npos)
      continue;
    const pid_t pid = static_cast<pid_t>(std::stol(std::string(digits)));
    if (pid != self && ::kill(pid, 0) != 0 && errno == ESRCH)
      ::unlink((folder + std::string(name)).c_str());
  }
  ::closedir(dir);
}

} // namespace

void removeTemporaryInProgress() {
  if (slot.load() == 2)
    ::unlink(inProgress);
}

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
  removeDeadTemporaries(path);
  std::string tmp = path + ".tmp" + std::to_string(::getpid());
  const bool held = holdSlot(tmp);
  struct Release {
    bool held;
    ~Release() {
      if (held)
        slot.store(0);
    }
  } release{held};
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

std::string writeOutputFile(const std::string &path, const std::string &text,
                            const char *what) {
  return writeFileWhole(path, what, {text});
}

std::string checkFolderTakesFiles(const std::string &given, const char *what) {
  std::string path = given;
  while (path.size() > 1 && path.back() == '/')
    path.pop_back();
  size_t slash = path.find_last_of('/');
  std::string folder = slash == std::string::npos ? "."
                       : slash == 0               ? "/"
                                                  : path.substr(0, slash);
  struct stat st;
  if (stat(folder.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    return std::string("cannot write ") + what + " '" + path +
           "': the folder '" + folder + "' does not exist";
  // The folder may refuse files (/proc, a read-only mount, no permission):
  // a temporary as a write makes is made and removed now, so that a long
  // run does not learn it at its end.
  const std::string probe = path + ".tmp" + std::to_string(::getpid());
  int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
  if (fd < 0) {
    if (errno == EEXIST)
      return ""; // this process's own write in progress
    return std::string("cannot write ") + what + " '" + path +
           "': the folder '" + folder + "' takes no new file (" +
           std::strerror(errno) + ")";
  }
  ::close(fd);
  ::unlink(probe.c_str());
  return "";
}

std::string checkOutputPath(const std::string &path, const char *what) {
  struct stat st;
  if (stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode))
    return std::string("cannot write ") + what + " '" + path +
           "': it is a folder";
  if (stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    return ""; // a FIFO or a device is written into as it is
  return checkFolderTakesFiles(path, what);
}

bool sameFile(const std::string &a, const std::string &b) {
  struct stat sa, sb;
  return stat(a.c_str(), &sa) == 0 && stat(b.c_str(), &sb) == 0 &&
         sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

} // namespace whale::rt
