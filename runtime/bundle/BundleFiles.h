//===- BundleFiles.h - a compiled plan's shared objects, vouched for -*- C++
//-*-===//
//
// `whale-exec` runs the code of the shared objects beside a manifest, so it
// loads nothing the manifest does not vouch for: each file's size and
// CRC-32C are in `plan.json` (`files`), checked before the file is mapped
// (a truncated object would crash the loader with SIGBUS; one of another
// build would train another model), and each entry point must be a symbol
// of that very library (dlsym alone also finds libc's `abort` or `exit`
// through its dependencies).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_BUNDLE_BUNDLEFILES_H
#define WHALE_RUNTIME_BUNDLE_BUNDLEFILES_H

#include <cstdint>
#include <string>
#include <vector>

namespace whale {

/// One shared object of a bundle, as the compiler wrote it.
struct BundleFile {
  std::string name; ///< beside the manifest
  int64_t bytes = 0;
  uint32_t crc32c = 0;
};

/// The size and CRC-32C of the regular file at `path` into `out` (its name
/// is `out.name`, set by the caller); "" or why not.
std::string describeBundleFile(const std::string &path, BundleFile &out);

/// "" when `path` (a file named `name` beside the manifest) is the file
/// `files` vouches for: listed, of its size and CRC-32C.
std::string checkBundleFile(const std::string &path, const std::string &name,
                            const std::vector<BundleFile> &files);

/// A loaded shared object of compiled programs, closed when dropped.
class LoadedLibrary {
public:
  LoadedLibrary() = default;
  LoadedLibrary(const LoadedLibrary &) = delete;
  LoadedLibrary &operator=(const LoadedLibrary &) = delete;
  ~LoadedLibrary();

  /// Loads `path` after checking it against `files`; "" or why not.
  std::string open(const std::string &path, const std::string &name,
                   const std::vector<BundleFile> &files);

  /// The address of `symbol` when this library defines it (not one of its
  /// dependencies); null otherwise.
  void *symbol(const std::string &symbol) const;

private:
  void *handle = nullptr;
  std::string path;
};

} // namespace whale

#endif
