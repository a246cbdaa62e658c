//===- CheckpointSetTest.cpp - checkpoint folders replaced as one unit ----===//

#include "runtime/checkpoint/CheckpointSet.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace fs = std::filesystem;
using namespace whale::rt;

namespace {

std::string freshFolder(const char *name) {
  fs::path dir = fs::temp_directory_path() /
                 ("whale-ckset-" + std::to_string(::getpid()) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir.string();
}

void writeText(const std::string &path, const std::string &text) {
  std::ofstream(path) << text;
}

std::string readText(const std::string &path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// Saves a set of `files` files reading `text` into `dir`, as a save does.
std::string saveSet(const std::string &dir, int files,
                    const std::string &text) {
  if (std::string err = beginCheckpointSet(dir); !err.empty())
    return err;
  for (int r = 0; r < files; ++r)
    writeText(stagingFolder(dir) + "/rank-0000" + std::to_string(r) +
                  ".safetensors",
              text);
  return commitCheckpointSet(dir);
}

TEST(CheckpointSet, ReplacesTheWholeFolder) {
  const std::string root = freshFolder("replace");
  const std::string ck = root + "/ck";
  ASSERT_EQ(saveSet(ck, 3, "old"), "");
  ASSERT_EQ(saveSet(ck, 2, "new"), "");
  // The new set alone: the old set's third file went with it.
  EXPECT_EQ(readText(ck + "/rank-00000.safetensors"), "new");
  EXPECT_EQ(readText(ck + "/rank-00001.safetensors"), "new");
  EXPECT_FALSE(fs::exists(ck + "/rank-00002.safetensors"));
  EXPECT_FALSE(fs::exists(stagingFolder(ck)));
  // A trailing slash names the same folder, not a staging folder inside.
  EXPECT_EQ(stagingFolder(ck + "/"), stagingFolder(ck));
  fs::remove_all(root);
}

TEST(CheckpointSet, AnInterruptedSaveLeavesTheOldSet) {
  const std::string root = freshFolder("interrupted");
  const std::string ck = root + "/ck";
  ASSERT_EQ(saveSet(ck, 2, "old"), "");
  // A save killed after one of its files: nothing committed.
  ASSERT_EQ(beginCheckpointSet(ck), "");
  writeText(stagingFolder(ck) + "/rank-00000.safetensors", "new");
  EXPECT_EQ(readText(ck + "/rank-00000.safetensors"), "old");
  EXPECT_EQ(readText(ck + "/rank-00001.safetensors"), "old");
  // The next save clears what the killed one left.
  ASSERT_EQ(saveSet(ck, 1, "next"), "");
  EXPECT_EQ(readText(ck + "/rank-00000.safetensors"), "next");
  EXPECT_FALSE(fs::exists(ck + "/rank-00001.safetensors"));
  fs::remove_all(root);
}

TEST(CheckpointSet, ACrashBetweenTheTwoRenamesIsTakenBack) {
  const std::string root = freshFolder("previous");
  const std::string ck = root + "/ck";
  ASSERT_EQ(saveSet(ck, 1, "old"), "");
  // Where the file system cannot exchange names: DIR moved aside, then
  // the crash before the new set came in.
  fs::rename(ck, ck + ".previous");
  ASSERT_EQ(recoverCheckpointSet(ck), "");
  EXPECT_EQ(readText(ck + "/rank-00000.safetensors"), "old");
  EXPECT_FALSE(fs::exists(ck + ".previous"));
  fs::remove_all(root);
}

TEST(CheckpointSet, RefusesAFolderWithOtherFiles) {
  const std::string root = freshFolder("others");
  writeText(root + "/notes.txt", "a user's file");
  std::string err = checkReplaceableFolder(root);
  EXPECT_NE(err.find("it holds 'notes.txt'"), std::string::npos) << err;
  EXPECT_NE(beginCheckpointSet(root), "");
  EXPECT_EQ(readText(root + "/notes.txt"), "a user's file");
  // A checkpoint's own files and their temporaries are fine.
  fs::remove(root + "/notes.txt");
  writeText(root + "/checkpoint.safetensors", "x");
  writeText(root + "/rank-00003.safetensors.tmp1234", "x");
  EXPECT_EQ(checkReplaceableFolder(root), "");
  writeText(root + "/rank-3.safetensors", "x");
  EXPECT_NE(checkReplaceableFolder(root), "");
  // A file, not a folder.
  EXPECT_NE(checkReplaceableFolder(root + "/rank-3.safetensors"), "");
  EXPECT_EQ(checkReplaceableFolder(root + "/missing"), "");
  fs::remove_all(root);
}

// The names a save uses beside its folder (DIR.saving, DIR.previous) are
// taken only where a save made them: a user's folder of that name is never
// removed, taken back or swapped, and a save is refused before it starts
// (issue 92 item 3).
TEST(CheckpointSet, NeverTakesAUsersFolderBesideTheSet) {
  const std::string root = freshFolder("aside");
  const std::string ck = root + "/ck";
  ASSERT_EQ(saveSet(ck, 1, "old"), "");
  // A user's own ck.previous: a save neither removes nor swaps it.
  fs::create_directories(ck + ".previous");
  writeText(ck + ".previous/notes.txt", "a user's file");
  std::string err = checkReplaceableFolder(ck);
  EXPECT_NE(err.find("ck.previous' is not a folder a save made"),
            std::string::npos)
      << err;
  EXPECT_NE(saveSet(ck, 1, "new"), "");
  EXPECT_EQ(readText(ck + ".previous/notes.txt"), "a user's file");
  EXPECT_EQ(readText(ck + "/rank-00000.safetensors"), "old");
  // Nor is it taken back as the set when the set is missing.
  fs::remove_all(ck);
  EXPECT_NE(recoverCheckpointSet(ck), "");
  EXPECT_FALSE(fs::exists(ck));
  EXPECT_EQ(readText(ck + ".previous/notes.txt"), "a user's file");
  fs::remove_all(ck + ".previous");
  // A user's ck.saving holding other files is not cleared.
  fs::create_directories(ck + ".saving");
  writeText(ck + ".saving/draft.txt", "a user's draft");
  EXPECT_NE(beginCheckpointSet(ck), "");
  EXPECT_EQ(readText(ck + ".saving/draft.txt"), "a user's draft");
  // What an interrupted save left there is: its own files.
  fs::remove(ck + ".saving/draft.txt");
  writeText(ck + ".saving/rank-00000.safetensors.tmp99", "partial");
  EXPECT_EQ(saveSet(ck, 1, "next"), "");
  EXPECT_EQ(readText(ck + "/rank-00000.safetensors"), "next");
  fs::remove_all(root);
}

// A compiled plan's folder always holds its manifest: a folder of nothing
// but .o and .so files may be a user's build, and is not replaced.
TEST(CheckpointSet, AFolderOfObjectFilesIsNoCompiledPlan) {
  const std::string root = freshFolder("objects");
  writeText(root + "/lib.so", "a user's library");
  writeText(root + "/main.o", "a user's object");
  std::string err = checkReplaceableFolder(root, FolderKind::CompiledPlan);
  EXPECT_NE(err.find("holds no plan.json"), std::string::npos) << err;
  writeText(root + "/plan.json", "{}");
  EXPECT_EQ(checkReplaceableFolder(root, FolderKind::CompiledPlan), "");
  fs::remove_all(root);
}

} // namespace
