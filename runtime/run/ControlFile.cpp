//===- ControlFile.cpp - a running job's request for other devices --------===//

#include "runtime/run/ControlFile.h"

#include "support/InputFile.h"

#include <sys/stat.h>

#include <cstdio>

namespace whale {

namespace {

/// A request is short: a long file is not one.
constexpr uint64_t kMaxControlBytes = 4096;

/// Tags of the driver's own messages under mpirun, above any a rank
/// program uses (runtime/state/ProcessReshard.cpp's are at 2^40).
constexpr int64_t kControlTag = int64_t(1) << 42;

/// `text` without the blanks around it.
std::string trimmed(const std::string &text) {
  const char *blanks = " \t\r\n\v\f";
  const size_t first = text.find_first_not_of(blanks);
  if (first == std::string::npos)
    return "";
  return text.substr(first, text.find_last_not_of(blanks) + 1 - first);
}

} // namespace

std::string ControlFile::requestIn(const std::string &text,
                                   std::string &spec) const {
  // One line of printable text that the check accepts; else why not, never
  // quoting bytes that are not text.
  const std::string t = trimmed(text);
  for (char c : t)
    if (static_cast<unsigned char>(c) < 0x20 ||
        static_cast<unsigned char>(c) >= 0x7f)
      return c == '\n' ? "it holds more than one line, where a control file "
                         "holds " +
                             expected
                       : "it is not text (" + std::to_string(text.size()) +
                             " bytes), where a control file holds " + expected;
  if (t.empty())
    return "it is empty, where a control file holds " + expected;
  if (std::string why = check(t); !why.empty())
    return why;
  spec = t;
  return "";
}

ControlFile::Read ControlFile::poll(std::string &spec, std::string &why) {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return Read::Nothing;
  const std::string signature = std::to_string(st.st_size) + "@" +
                                std::to_string(st.st_mtim.tv_sec) + "." +
                                std::to_string(st.st_mtim.tv_nsec);
  std::string text;
  std::string reason =
      rt::readRegularFile(path, "the control file", kMaxControlBytes, text);
  // An empty file is one a writer made and has not filled yet: read it
  // again at the next step rather than refuse it and then, filled, refuse
  // or take it a second time.
  if (reason.empty() && text.empty())
    return Read::Nothing;
  if (reason.empty())
    reason = requestIn(text, spec);
  if (reason.empty()) {
    std::remove(path.c_str());
    lastRefused.clear();
    return Read::Request;
  }
  if (signature == lastRefused)
    return Read::Nothing;
  lastRefused = signature;
  why = "the file was left as it is (" + reason + ")";
  return Read::Refused;
}

bool ControlFile::pollEverywhere(int64_t step, int32_t processRank,
                                 whale_rt_comm *comm,
                                 const ProcessLayout *processes,
                                 std::string &spec, std::string &why) {
  std::string told = "0";
  if (processRank <= 0)
    switch (poll(spec, why)) {
    case Read::Nothing:
      break;
    case Read::Request:
      told = "1" + spec;
      break;
    case Read::Refused:
      told = "2" + why;
      break;
    }
  if (processes &&
      !shareFromProcessZero(comm, *processes, kControlTag + 2 * step, told)) {
    why = "the processes could not share the control file";
    return true;
  }
  if (told.empty() || told[0] == '0')
    return false;
  (told[0] == '1' ? spec : why) = told.substr(1);
  return true;
}

std::string ControlFile::checkAtStart() const {
  struct stat st;
  if (::stat(path.c_str(), &st) != 0)
    return "";
  std::string text, spec;
  std::string reason =
      rt::readRegularFile(path, "the control file", kMaxControlBytes, text);
  if (reason.empty())
    reason = requestIn(text, spec);
  return reason.empty()
             ? ""
             : "--control " + path + " exists and is not a request (" + reason +
                   "): name a file that does not exist yet";
}

} // namespace whale
