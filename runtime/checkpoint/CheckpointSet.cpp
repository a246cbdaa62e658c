//===- CheckpointSet.cpp - a checkpoint folder replaced as one unit -------===//

#include "runtime/checkpoint/CheckpointSet.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <filesystem>
#include <sys/syscall.h>
#include <unistd.h>

namespace whale::rt {

namespace fs = std::filesystem;

namespace {

/// `dir` without trailing slashes, which would put `DIR/.saving` inside it.
std::string plain(const std::string &dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/')
    d.pop_back();
  return d;
}

std::string previousFolder(const std::string &dir) {
  return plain(dir) + ".previous";
}

/// A name an earlier save of `kind` leaves in its folder, or a temporary
/// of one (`NAME.tmpPID`).
bool isOwnFileName(const std::string &name, FolderKind kind) {
  std::string base = name;
  if (size_t tmp = base.rfind(".tmp");
      tmp != std::string::npos && tmp + 4 < base.size() &&
      base.find_first_not_of("0123456789", tmp + 4) == std::string::npos)
    base.resize(tmp);
  auto endsWith = [&](const char *suffix) {
    const size_t n = std::strlen(suffix);
    return base.size() > n && base.compare(base.size() - n, n, suffix) == 0;
  };
  if (kind == FolderKind::CompiledPlan)
    return base == "plan.json" || endsWith(".so") || endsWith(".o");
  if (base == "checkpoint.safetensors")
    return true;
  // rank-NNNNN.safetensors, five digits or more.
  const std::string suffix = ".safetensors";
  if (base.rfind("rank-", 0) != 0 || base.size() < 5 + 5 + suffix.size() ||
      base.compare(base.size() - suffix.size(), suffix.size(), suffix) != 0)
    return false;
  const std::string digits = base.substr(5, base.size() - 5 - suffix.size());
  return digits.find_first_not_of("0123456789") == std::string::npos;
}

/// Exchanges two existing names atomically; 0, else the errno.
int exchangeNames(const std::string &a, const std::string &b) {
#ifdef SYS_renameat2
  constexpr unsigned kExchange = 1u << 1; // RENAME_EXCHANGE
  if (::syscall(SYS_renameat2, AT_FDCWD, a.c_str(), AT_FDCWD, b.c_str(),
                kExchange) == 0)
    return 0;
  return errno;
#else
  return EINVAL;
#endif
}

/// Flushes a folder's entries (the renames in it) to disk, best effort.
void syncFolder(const std::string &path) {
  fs::path parent = fs::path(path).parent_path();
  int fd = ::open(parent.empty() ? "." : parent.c_str(),
                  O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

} // namespace

std::string stagingFolder(const std::string &dir) {
  return plain(dir) + ".saving";
}

namespace {

/// "" when `dir` is missing, or a folder holding nothing but the regular
/// files of `kind` (and their temporaries); else why not, for `what`.
std::string foreignContent(const std::string &dir, FolderKind kind,
                           const std::string &what) {
  std::error_code ec;
  fs::file_status st = fs::symlink_status(dir, ec);
  if (ec || st.type() == fs::file_type::not_found)
    return "";
  if (st.type() == fs::file_type::symlink)
    return "cannot save " + what + " into '" + dir +
           "': it is a symbolic link (name the folder itself)";
  if (st.type() != fs::file_type::directory)
    return "cannot save " + what + " into '" + dir + "': it is not a folder";
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end;
       it.increment(ec)) {
    const std::string name = it->path().filename().string();
    if (!isOwnFileName(name, kind) ||
        it->symlink_status(ec).type() != fs::file_type::regular)
      return "cannot save " + what + " into '" + dir + "': it holds '" + name +
             "', which is not " + what +
             "'s file, and a save replaces the whole folder (name a new "
             "folder or one of " +
             what + ")";
  }
  if (ec)
    return "cannot save " + what + " into '" + dir + "': " + ec.message();
  return "";
}

/// "" when the folder beside a set, `aside` (its `.saving` or
/// `.previous`), is missing or one a save made: it holds nothing but the
/// files of `kind`. A user's folder of that name is never removed,
/// adopted or swapped (issue 92 item 3).
std::string checkOwnAside(const std::string &aside, FolderKind kind) {
  std::error_code ec;
  if (!fs::exists(fs::symlink_status(aside, ec)))
    return "";
  if (foreignContent(aside, kind, "").empty())
    return "";
  return "'" + aside +
         "' is not a folder a save made (it is not a folder, or it holds "
         "other files); Whale uses that name beside the set: move it away";
}

} // namespace

std::string checkReplaceableFolder(const std::string &dir, FolderKind kind) {
  const std::string what =
      kind == FolderKind::Checkpoint ? "a checkpoint" : "a compiled plan";
  if (std::string err = foreignContent(dir, kind, what); !err.empty())
    return err;
  // A folder of nothing but .o and .so files may be the user's own build:
  // a compiled plan always has its manifest (issue 92 item 3).
  std::error_code ec;
  if (kind == FolderKind::CompiledPlan && fs::is_directory(dir, ec) &&
      !fs::is_empty(dir, ec) && !fs::exists(fs::path(dir) / "plan.json", ec))
    return "cannot save " + what + " into '" + dir +
           "': it holds no plan.json, so it is not a compiled plan a save "
           "may replace (name a new folder or one of a compiled plan)";
  // The names a save uses beside it: only its own folders there.
  for (const std::string &aside : {stagingFolder(dir), previousFolder(dir)})
    if (std::string err = checkOwnAside(aside, kind); !err.empty())
      return "cannot save " + what + " into '" + dir + "': " + err;
  return "";
}

std::string recoverCheckpointSet(const std::string &dir, FolderKind kind) {
  std::error_code ec;
  const std::string previous = previousFolder(dir);
  if (fs::exists(fs::symlink_status(dir, ec)) ||
      !fs::is_directory(fs::symlink_status(previous, ec)))
    return "";
  // Only a set a save put aside is taken back, never a user's folder.
  if (std::string err = checkOwnAside(previous, kind); !err.empty())
    return "cannot take back '" + previous + "' as '" + dir + "': " + err;
  if (std::rename(previous.c_str(), dir.c_str()) != 0)
    return "cannot take back the checkpoint '" + previous + "' as '" + dir +
           "': " + std::strerror(errno);
  syncFolder(dir);
  return "";
}

std::string beginCheckpointSet(const std::string &dir, FolderKind kind) {
  if (std::string err = recoverCheckpointSet(dir, kind); !err.empty())
    return err;
  if (std::string err = checkReplaceableFolder(dir, kind); !err.empty())
    return err;
  const std::string staging = stagingFolder(dir);
  std::error_code ec;
  fs::remove_all(staging, ec);
  if (ec)
    return "cannot clear '" + staging +
           "' (left by a save that was "
           "interrupted): " +
           ec.message();
  if (!fs::create_directories(staging, ec) || ec)
    return "cannot make the checkpoint folder '" + staging +
           "': " + (ec ? ec.message() : "it exists");
  return "";
}

std::string commitCheckpointSet(const std::string &dir) {
  const std::string staging = stagingFolder(dir);
  std::error_code ec;
  const bool exists = fs::exists(fs::symlink_status(dir, ec));
  auto failed = [&](const std::string &why) {
    return "cannot put the new checkpoint '" + staging + "' in place of '" +
           dir + "': " + why;
  };
  if (!exists) {
    if (std::rename(staging.c_str(), dir.c_str()) != 0)
      return failed(std::strerror(errno));
    syncFolder(dir);
    return "";
  }
  if (int err = exchangeNames(staging, dir); err == 0) {
    syncFolder(dir);
    fs::remove_all(staging, ec); // the old set, now under the staging name
    return "";
  } else if (err != EINVAL && err != ENOSYS && err != EPERM) {
    return failed(std::strerror(err));
  }
  // No atomic exchange here: aside, in, and the old set removed.
  const std::string previous = previousFolder(dir);
  fs::remove_all(previous, ec);
  if (std::rename(dir.c_str(), previous.c_str()) != 0)
    return failed(std::strerror(errno));
  if (std::rename(staging.c_str(), dir.c_str()) != 0) {
    int err = errno;
    std::rename(previous.c_str(), dir.c_str());
    return failed(std::strerror(err));
  }
  syncFolder(dir);
  fs::remove_all(previous, ec);
  return "";
}

void abandonCheckpointSet(const std::string &dir) {
  std::error_code ec;
  fs::remove_all(stagingFolder(dir), ec);
}

} // namespace whale::rt
