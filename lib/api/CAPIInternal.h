//===- CAPIInternal.h - the C API's handles ----------------------*- C++
//-*-===//

#ifndef WHALE_LIB_API_CAPIINTERNAL_H
#define WHALE_LIB_API_CAPIINTERNAL_H

#include "whale/Interpreter.h"
#include "whale/whale.h"

#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

/// One lock per handle: calls on one handle from several threads take
/// turns (an Interpreter and its MLIR context are not for concurrent use),
/// and handles share nothing, so separate handles run side by side.
struct whale_interp {
  whale::InterpreterOptions options;
  std::unique_ptr<whale::Interpreter> interp;
  /// The rendered diagnostics of the last load, made by the load itself so
  /// that reading them never replaces a string another thread holds.
  std::string rendered;
  /// Why the last plan, simulate, train or job_create failed.
  std::string lastError;
  mutable std::mutex lock;

  bool loaded(bool ok) {
    rendered = interp->renderDiagnostics();
    return ok;
  }
  /// Records the outcome of a call that reports through lastError.
  whale_status outcome(const std::string &error) {
    lastError = error;
    return error.empty() ? WHALE_OK : WHALE_ERROR_RUN;
  }
};

namespace whale::capi {

/// A copy of `text` the caller frees with whale_string_free; null when out
/// of memory.
inline char *newString(const std::string &text) {
  char *out = static_cast<char *>(std::malloc(text.size() + 1));
  if (out)
    std::memcpy(out, text.c_str(), text.size() + 1);
  return out;
}

} // namespace whale::capi

#endif
