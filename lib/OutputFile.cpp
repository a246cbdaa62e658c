//===- OutputFile.cpp - writing the files a user asked for ----------------===//

#include "lib/OutputFile.h"

#include "runtime/OutputFile.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"

namespace whale {

std::string writeOutputFile(const std::string &path, const std::string &text,
                            const char *what) {
  return rt::writeFileWhole(path, what, {text});
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
