//===- BundleFiles.cpp - a compiled plan's shared objects, vouched for ----===//

#include "runtime/bundle/BundleFiles.h"

#include "runtime/store/Crc32c.h"
#include "support/InputFile.h"
#include "support/Limits.h"

#include <cstring>
#include <dlfcn.h>
#include <link.h>

namespace whale {

namespace {
/// A shared object of rank programs is megabytes; past this it is not one.
constexpr uint64_t kMaxLibraryBytes = uint64_t(4) << 30;
} // namespace

std::string describeBundleFile(const std::string &path, BundleFile &out) {
  std::vector<uint8_t> bytes;
  if (std::string err = rt::readRegularFile(path, "the compiled programs",
                                            kMaxLibraryBytes, bytes);
      !err.empty())
    return err;
  out.bytes = static_cast<int64_t>(bytes.size());
  out.crc32c = rt::crc32c(bytes.data(), bytes.size());
  return "";
}

std::string checkBundleFile(const std::string &path, const std::string &name,
                            const std::vector<BundleFile> &files) {
  const BundleFile *expected = nullptr;
  for (const BundleFile &f : files)
    if (f.name == name)
      expected = &f;
  if (!expected)
    return "'" + path +
           "' is not among the files the compiled plan vouches for; compile "
           "the plan again";
  BundleFile actual;
  if (std::string err = describeBundleFile(path, actual); !err.empty())
    return err;
  if (actual.bytes != expected->bytes || actual.crc32c != expected->crc32c)
    return "'" + path + "' is not the file the plan was compiled with (" +
           std::to_string(actual.bytes) + " bytes against " +
           std::to_string(expected->bytes) +
           (actual.bytes == expected->bytes ? ", another checksum" : "") +
           "): it is damaged, truncated or of another build; compile the "
           "plan again";
  return "";
}

LoadedLibrary::~LoadedLibrary() {
  if (handle)
    dlclose(handle);
}

std::string LoadedLibrary::open(const std::string &file,
                                const std::string &name,
                                const std::vector<BundleFile> &files) {
  if (std::string err = checkBundleFile(file, name, files); !err.empty())
    return err;
  handle = dlopen(file.c_str(), RTLD_NOW | RTLD_LOCAL);
  path = file;
  if (!handle)
    return "cannot load the compiled programs '" + file + "': " + dlerror();
  return "";
}

void *LoadedLibrary::symbol(const std::string &name) const {
  if (!handle)
    return nullptr;
  void *address = dlsym(handle, name.c_str());
  // dlsym searches the library's dependencies too (libc, libm): only a
  // symbol the library itself defines is an entry point.
  Dl_info info;
  const struct link_map *map = nullptr;
  if (!address || !dladdr(address, &info) ||
      dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map ||
      info.dli_fbase == nullptr ||
      reinterpret_cast<uintptr_t>(info.dli_fbase) != map->l_addr)
    return nullptr;
  return address;
}

} // namespace whale
