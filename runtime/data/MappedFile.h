//===- MappedFile.h - a file mapped read-only into memory --------*- C++
//-*-===//
//
// What the corpus readers (TokenDataset, NpyArray) read through: a regular
// file mapped whole and never copied, unmapped when it goes. Move-only.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_DATA_MAPPEDFILE_H
#define WHALE_RUNTIME_DATA_MAPPEDFILE_H

#include "runtime/core/Status.h"

#include <cstddef>
#include <string>

namespace whale::rt {

class MappedFile {
public:
  MappedFile() = default;
  ~MappedFile();
  MappedFile(MappedFile &&o) noexcept;
  MappedFile &operator=(MappedFile &&o) noexcept;
  MappedFile(const MappedFile &) = delete;
  MappedFile &operator=(const MappedFile &) = delete;

  /// Maps `path`; `what` names it in errors ("token data 'x.bin'"): one
  /// that cannot be opened, is not a regular file or cannot be mapped. An
  /// empty file maps to no bytes.
  static Status open(const std::string &path, const std::string &what,
                     MappedFile &out);

  const unsigned char *data() const { return bytes; }
  size_t size() const { return length; }

private:
  void reset();
  const unsigned char *bytes = nullptr;
  size_t length = 0;
};

} // namespace whale::rt

#endif
