//===- TempPath.h - a test's file of its own in the temporary folder -*- C++
//-*-===//
//
// ctest -j2 runs a numerical test and its avx2 twin (the same binary, the
// same test) at once, and other processes may run the same suite: a file
// named by the test alone was written by two processes at once
// (TextDataset.AFolderIsItsFilesInSortedOrder removed the other's folder).
// The process id makes the name its own.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_TEST_UNIT_TEMPPATH_H
#define WHALE_TEST_UNIT_TEMPPATH_H

#include <gtest/gtest.h>

#include <string>
#include <unistd.h>

namespace whale::testing {

/// `name` in gtest's temporary folder, prefixed with this process's id.
inline std::string tempPath(const std::string &name) {
  return ::testing::TempDir() + "whale-" + std::to_string(::getpid()) + "-" +
         name;
}

} // namespace whale::testing

#endif // WHALE_TEST_UNIT_TEMPPATH_H
