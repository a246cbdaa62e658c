//===- ReplayMain.cpp - runs the fuzz target over saved inputs ------------===//
//
// `whale-fuzz-replay PATH...` feeds every file (folders are walked) to the
// fuzz target once and prints how many ran. A crash fails the test.
//
//===----------------------------------------------------------------------===//

#include <cstdint>
#include <cstdio>
#include <dirent.h>
#include <fstream>
#include <sstream>
#include <string>
#include <sys/stat.h>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void collect(const std::string &path, std::vector<std::string> &out) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return;
  if (S_ISREG(st.st_mode)) {
    out.push_back(path);
    return;
  }
  if (!S_ISDIR(st.st_mode))
    return;
  DIR *dir = ::opendir(path.c_str());
  if (!dir)
    return;
  while (dirent *e = ::readdir(dir)) {
    std::string name = e->d_name;
    if (name != "." && name != "..")
      collect(path + "/" + name, out);
  }
  ::closedir(dir);
}

int main(int argc, char **argv) {
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i)
    collect(argv[i], files);
  if (files.empty()) {
    std::fprintf(stderr, "whale-fuzz-replay: no inputs found\n");
    return 1;
  }
  for (const std::string &f : files) {
    std::ifstream in(f, std::ios::binary);
    std::ostringstream ss;
    ss << in.rdbuf();
    std::string data = ss.str();
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t *>(data.data()),
                           data.size());
  }
  std::printf("replayed %zu inputs without a crash\n", files.size());
  return 0;
}
