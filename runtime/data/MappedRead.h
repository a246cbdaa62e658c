//===- MappedRead.h - reading a mapped file that may shrink -------*- C++ -*-===//
//
// A corpus is mapped, not copied (MappedFile.h). If the file is truncated
// while a run maps it (a user rewriting it, a disk quota), touching a page
// past its new end raises SIGBUS, which would kill the run with no word
// of why. Reads of mapped data go through readMapped: a SIGBUS inside it
// ends the read, which reports the file changed, and the run fails with
// an error instead. The body only reads mapped bytes into memory it owns
// and allocates nothing (a SIGBUS leaves it without unwinding).
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_DATA_MAPPEDREAD_H
#define WHALE_RUNTIME_DATA_MAPPEDREAD_H

#include <csetjmp>

namespace whale::rt {

namespace detail {
/// This thread's guarded read, if any (where SIGBUS returns to).
sigjmp_buf *&activeMappedRead();
/// Installs the SIGBUS handler once; a SIGBUS outside a guarded read goes
/// to the handler there was before.
void installMappedReadGuard();
} // namespace detail

/// Runs `body`; false when a mapped page it read was gone (SIGBUS).
template <class Body> bool readMapped(Body &&body) {
  detail::installMappedReadGuard();
  sigjmp_buf here;
  sigjmp_buf *outer = detail::activeMappedRead();
  // The signal mask is saved: returning from the handler by siglongjmp
  // must unblock SIGBUS again.
  if (sigsetjmp(here, 1) != 0) {
    detail::activeMappedRead() = outer;
    return false;
  }
  detail::activeMappedRead() = &here;
  body();
  detail::activeMappedRead() = outer;
  return true;
}

} // namespace whale::rt

#endif
