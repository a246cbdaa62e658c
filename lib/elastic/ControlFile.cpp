//===- ControlFile.cpp - a running job's request for other devices --------===//

#include "lib/elastic/ControlFile.h"

#include "lib/compile/Cluster.h"
#include "support/InputFile.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/FileSystem.h"

namespace whale {

namespace {

/// A cluster spec is short: a long file is not one.
constexpr uint64_t kMaxControlBytes = 4096;

/// "" when `text` is a request: one line of printable text that parses
/// as a cluster spec; else why not, never quoting bytes that are not text.
std::string requestIn(const std::string &text, std::string &spec) {
  llvm::StringRef t = llvm::StringRef(text).trim();
  for (char c : t)
    if (static_cast<unsigned char>(c) < 0x20 ||
        static_cast<unsigned char>(c) >= 0x7f)
      return c == '\n' ? "it holds more than one line, where a control file "
                         "holds one cluster spec such as cpu:4"
                       : "it is not text (" + std::to_string(text.size()) +
                             " bytes), where a control file holds one "
                             "cluster spec such as cpu:4";
  if (t.empty())
    return "it is empty, where a control file holds one cluster spec such "
           "as cpu:4";
  Cluster parsed;
  std::string why;
  if (!parseCluster(t.str(), parsed, why))
    return why;
  spec = t.str();
  return "";
}

} // namespace

ControlFile::Read ControlFile::poll(std::string &spec, std::string &why) {
  llvm::sys::fs::file_status st;
  if (llvm::sys::fs::status(path, st) ||
      st.type() == llvm::sys::fs::file_type::file_not_found)
    return Read::Nothing;
  const std::string signature =
      std::to_string(st.getSize()) + "@" +
      std::to_string(st.getLastModificationTime().time_since_epoch().count());
  std::string text;
  std::string reason =
      rt::readRegularFile(path, "the control file", kMaxControlBytes, text);
  if (reason.empty())
    reason = requestIn(text, spec);
  if (reason.empty()) {
    llvm::sys::fs::remove(path);
    lastRefused.clear();
    return Read::Request;
  }
  if (signature == lastRefused)
    return Read::Nothing;
  lastRefused = signature;
  why = "the file was left as it is (" + reason + ")";
  return Read::Refused;
}

std::string ControlFile::checkAtStart() const {
  if (!llvm::sys::fs::exists(path))
    return "";
  std::string text, spec;
  std::string reason =
      rt::readRegularFile(path, "the control file", kMaxControlBytes, text);
  if (reason.empty())
    reason = requestIn(text, spec);
  return reason.empty() ? ""
                        : "--control " + path +
                              " exists and is not a request (" + reason +
                              "): name a file that does not exist yet";
}

} // namespace whale
