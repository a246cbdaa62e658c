//===- TempPath.h - a test's file of its own in the temporary folder -*- C++
//-*-===//
//
// ctest -j2 runs a numerical test and its avx2 twin (the same binary, the
// same test) at once, and other processes may run the same suite: a file
// named by the test alone was written by two processes at once
// (TextDataset.AFolderIsItsFilesInSortedOrder removed the other's folder).
// The process id makes the name its own, and the process removes what it
// named when it exits, so runs do not pile files up in the folder.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_TEST_UNIT_TEMPPATH_H
#define WHALE_TEST_UNIT_TEMPPATH_H

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <mutex>
#include <set>
#include <string>
#include <unistd.h>

namespace whale::testing {

namespace detail {
struct TempPaths {
  std::mutex lock;
  std::set<std::string> named;
  /// The process that named them: a child a test forks inherits the exit
  /// handler, and must not remove its parent's files when it exits.
  pid_t owner = ::getpid();
};
inline TempPaths &tempPaths() {
  // Never destroyed: the exit handler may run after other statics are.
  static TempPaths *paths = [] {
    std::atexit([] {
      TempPaths &p = tempPaths();
      std::lock_guard<std::mutex> guard(p.lock);
      if (::getpid() != p.owner)
        return;
      for (const std::string &path : p.named) {
        std::error_code ec;
        std::filesystem::remove_all(path, ec);
      }
    });
    return new TempPaths();
  }();
  return *paths;
}
} // namespace detail

/// `name` in gtest's temporary folder, prefixed with this process's id;
/// removed (a folder with what it holds) when the process exits.
inline std::string tempPath(const std::string &name) {
  std::string path =
      ::testing::TempDir() + "whale-" + std::to_string(::getpid()) + "-" + name;
  // A name ending in '/' is a folder: remove it whole.
  std::string whole = path;
  while (whole.size() > 1 && whole.back() == '/')
    whole.pop_back();
  detail::TempPaths &p = detail::tempPaths();
  std::lock_guard<std::mutex> guard(p.lock);
  p.named.insert(whole);
  return path;
}

} // namespace whale::testing

#endif // WHALE_TEST_UNIT_TEMPPATH_H
