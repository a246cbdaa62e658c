//===- TextDataset.cpp - bytes of text files as training samples ----------===//

#include "runtime/data/TextDataset.h"

#include "support/InputFile.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <dirent.h>
#include <sys/stat.h>

namespace whale::rt {

static void listFiles(const std::string &dir, std::vector<std::string> &out) {
  DIR *d = ::opendir(dir.c_str());
  if (!d)
    return;
  std::vector<std::string> names;
  while (dirent *e = ::readdir(d)) {
    std::string n = e->d_name;
    if (n != "." && n != "..")
      names.push_back(n);
  }
  ::closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string &n : names) {
    std::string p = dir + "/" + n;
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0)
      continue;
    // Symbolic links are skipped: they could loop or leave the folder.
    if (S_ISDIR(st.st_mode))
      listFiles(p, out);
    else if (S_ISREG(st.st_mode))
      out.push_back(p);
  }
}

Status TextDataset::open(const std::string &path, int64_t seq,
                         TextDataset &out) {
  if (seq < 1)
    return Status::invalid("text data needs seq >= 1, got " +
                           std::to_string(seq));
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return Status::invalid("cannot read text data '" + path +
                           "': " + std::strerror(errno));
  TextDataset ds;
  ds.seq = seq;
  if (S_ISDIR(st.st_mode))
    listFiles(path, ds.paths);
  else
    ds.paths.push_back(path);
  for (const std::string &p : ds.paths) {
    std::vector<uint8_t> bytes;
    if (std::string why = readRegularFile(
            p, "text data", kMaxDataInput - ds.bytes.size(), bytes);
        !why.empty())
      return Status::invalid(why);
    ds.bytes.insert(ds.bytes.end(), bytes.begin(), bytes.end());
  }
  if (static_cast<int64_t>(ds.bytes.size()) < seq + 1)
    return Status::invalid(
        "text data '" + path + "' has " + std::to_string(ds.bytes.size()) +
        " bytes; one sample of seq = " + std::to_string(seq) + " needs " +
        std::to_string(seq + 1));
  // Non-overlapping windows; the last byte of one is the first target of
  // the next, so every byte is a target once.
  ds.samples = (static_cast<int64_t>(ds.bytes.size()) - 1) / seq;
  out = std::move(ds);
  return Status::ok();
}

double TextDataset::unigramEntropyBits() const {
  double counts[256] = {};
  for (unsigned char b : bytes)
    counts[b] += 1;
  double n = static_cast<double>(bytes.size()), h = 0;
  for (double c : counts)
    if (c > 0)
      h -= c / n * std::log2(c / n);
  return h;
}

} // namespace whale::rt
