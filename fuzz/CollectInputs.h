//===- CollectInputs.h - the files under some paths --------------*- C++
//-*-===//

#ifndef WHALE_FUZZ_COLLECTINPUTS_H
#define WHALE_FUZZ_COLLECTINPUTS_H

#include <dirent.h>
#include <string>
#include <sys/stat.h>
#include <vector>

namespace whale::fuzz {

/// Appends `path` if it is a file, or every file below it if a folder.
inline void collectInputs(const std::string &path,
                          std::vector<std::string> &out) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return;
  if (S_ISREG(st.st_mode)) {
    out.push_back(path);
    return;
  }
  DIR *dir = S_ISDIR(st.st_mode) ? ::opendir(path.c_str()) : nullptr;
  if (!dir)
    return;
  while (dirent *e = ::readdir(dir)) {
    std::string name = e->d_name;
    if (name != "." && name != "..")
      collectInputs(path + "/" + name, out);
  }
  ::closedir(dir);
}

} // namespace whale::fuzz

#endif
