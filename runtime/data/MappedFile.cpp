//===- MappedFile.cpp - a file mapped read-only into memory ---------------===//

#include "runtime/data/MappedFile.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

namespace whale::rt {

MappedFile::~MappedFile() { reset(); }

MappedFile::MappedFile(MappedFile &&o) noexcept { *this = std::move(o); }

MappedFile &MappedFile::operator=(MappedFile &&o) noexcept {
  if (this != &o) {
    reset();
    bytes = o.bytes;
    length = o.length;
    o.bytes = nullptr;
    o.length = 0;
  }
  return *this;
}

void MappedFile::reset() {
  if (bytes && length > 0)
    ::munmap(const_cast<unsigned char *>(bytes), length);
  bytes = nullptr;
  length = 0;
}

Status MappedFile::open(const std::string &path, const std::string &what,
                        MappedFile &out) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return Status::invalid("cannot read " + what + ": " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::invalid(what + " is not a regular file");
  }
  MappedFile f;
  f.length = static_cast<size_t>(st.st_size);
  if (f.length > 0) {
    void *m = ::mmap(nullptr, f.length, PROT_READ, MAP_PRIVATE, fd, 0);
    if (m == MAP_FAILED) {
      int err = errno;
      ::close(fd);
      f.length = 0;
      return Status::invalid("cannot map " + what + ": " + std::strerror(err));
    }
    f.bytes = static_cast<const unsigned char *>(m);
  }
  ::close(fd);
  out = std::move(f);
  return Status::ok();
}

} // namespace whale::rt
