//===- BundleFilesTest.cpp - a bundle's shared objects, vouched for -------===//

#include "runtime/bundle/BundleFiles.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace fs = std::filesystem;

namespace {

/// A shared object defining `whale_test_entry`, which calls into libc (so
/// libc is among its dependencies, where dlsym would also look).
std::string buildLibrary(const fs::path &dir) {
  fs::create_directories(dir);
  const fs::path source = dir / "entry.cpp", library = dir / "ranks-0.so";
  std::ofstream(source) << "#include <cstdlib>\n"
                           "extern \"C\" int whale_test_entry(int n) {\n"
                           "  void *p = std::malloc(n); std::free(p);\n"
                           "  return n + 1;\n}\n";
  const std::string command = std::string(WHALE_HOST_CXX) +
                              " -shared -fPIC -o " + library.string() + " " +
                              source.string();
  return std::system(command.c_str()) == 0 ? library.string() : "";
}

/// A library in a fresh folder of its own and the manifest's entry for it.
struct Built {
  fs::path dir;
  std::string library;
  whale::BundleFile file{"ranks-0.so"};
  explicit Built(const char *name)
      : dir(fs::temp_directory_path() /
            (std::string("whale-bundle-") + name + "-" +
             std::to_string(::getpid()))),
        library(buildLibrary(dir)) {
    if (!library.empty())
      (void)whale::describeBundleFile(library, file);
  }
  ~Built() { fs::remove_all(dir); }
};

TEST(BundleFiles, OnlyTheLibrarysOwnSymbolsAreEntryPoints) {
  Built built("own");
  const std::string &library = built.library;
  ASSERT_FALSE(library.empty());
  const whale::BundleFile &file = built.file;
  whale::LoadedLibrary loaded;
  ASSERT_EQ(loaded.open(library, "ranks-0.so", {file}), "");
  auto entry = reinterpret_cast<int (*)(int)>(
      loaded.symbol("whale_test_entry"));
  ASSERT_NE(entry, nullptr);
  EXPECT_EQ(entry(4), 5);
  // What dlsym finds through the library's dependencies is not its own.
  for (const char *foreign : {"abort", "exit", "free", "malloc", "system"})
    EXPECT_EQ(loaded.symbol(foreign), nullptr) << foreign;
}

TEST(BundleFiles, AFileTheManifestDoesNotVouchForIsNotLoaded) {
  Built built("vouched");
  const std::string &library = built.library;
  ASSERT_FALSE(library.empty());
  const whale::BundleFile &file = built.file;
  ASSERT_GT(file.bytes, 0);
  whale::LoadedLibrary unlisted;
  EXPECT_NE(unlisted.open(library, "ranks-0.so", {}).find(
                "is not among the files the compiled plan vouches for"),
            std::string::npos);
  whale::BundleFile other = file;
  other.crc32c ^= 1;
  whale::LoadedLibrary changed;
  EXPECT_NE(changed.open(library, "ranks-0.so", {other})
                .find("is not the file the plan was compiled with"),
            std::string::npos);
  EXPECT_EQ(changed.symbol("whale_test_entry"), nullptr);
  // A truncated file (which dlopen would map and die on with SIGBUS).
  fs::resize_file(library, 100);
  whale::LoadedLibrary truncated;
  EXPECT_NE(truncated.open(library, "ranks-0.so", {file})
                .find("(100 bytes against"),
            std::string::npos);
}

} // namespace
