//===- ControlFile.h - a running job's request for other devices -*- C++ -*-===//
//
// `whale run --control FILE`: a user writes a cluster spec into FILE and
// the run moves to those devices at the next step boundary, removing FILE
// as the sign that it was read. FILE is only ever removed when it holds a
// request: one line of text that parses as a cluster spec. Anything else
// (a script or a checkpoint named by mistake, a half-written line) stays
// where it is, and the run says so once, without echoing its bytes.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_ELASTIC_CONTROLFILE_H
#define WHALE_LIB_ELASTIC_CONTROLFILE_H

#include <string>

namespace whale {

class ControlFile {
public:
  explicit ControlFile(std::string path) : path(std::move(path)) {}

  enum class Read { Nothing, Request, Refused };
  /// Reads the file when it is there: Request with the spec in `spec` (the
  /// file removed), Refused with the reason in `why` (the file kept; said
  /// once for one content), or Nothing.
  Read poll(std::string &spec, std::string &why);

  /// "" when the path can serve as a control file at the start of a run:
  /// it does not exist yet, or it holds a request already.
  std::string checkAtStart() const;

private:
  std::string path;
  /// The size and time of the last file refused, not reported again.
  std::string lastRefused;
};

} // namespace whale

#endif
