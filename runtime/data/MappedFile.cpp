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
  // Non-blocking: a FIFO named by mistake fails below instead of waiting
  // for a writer for ever.
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd < 0)
    return Status::invalid("cannot read " + what + ": " + std::strerror(errno));
  struct stat st;
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    return Status::invalid(what + " is not a regular file" +
                           (S_ISFIFO(st.st_mode) ? " (it is a FIFO)" : ""));
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
