//===- ControlFile.h - a running job's request for other devices -*- C++
//-*-===//
//
// `whale run --control FILE`: a user writes a cluster spec into FILE and
// the run moves to those devices at the next step boundary, removing FILE
// as the sign that it was read; `whale-exec --control FILE` takes the folder
// of a compiled plan instead. FILE is only ever removed when it holds a
// request: one line of text that the run's check accepts. Anything else (a
// script or a checkpoint named by mistake, a half-written line) stays where
// it is, and the run says so once, without echoing its bytes.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_RUN_CONTROLFILE_H
#define WHALE_RUNTIME_RUN_CONTROLFILE_H

#include "runtime/run/Processes.h"

#include <cstdint>
#include <functional>
#include <string>

namespace whale {

class ControlFile {
public:
  /// "" when one line of text is a request, else why not.
  using Check = std::function<std::string(const std::string &line)>;

  /// `expected` says what a request is ("one cluster spec such as cpu:4").
  ControlFile(std::string path, std::string expected, Check check)
      : path(std::move(path)), expected(std::move(expected)),
        check(std::move(check)) {}

  enum class Read { Nothing, Request, Refused };
  /// Reads the file when it is there: Request with the request in `spec`
  /// (the file removed), Refused with the reason in `why` (the file kept;
  /// said once for one content), or Nothing.
  Read poll(std::string &spec, std::string &why);

  /// poll() at step boundary `step` by every process alike: under mpirun
  /// (`processes` not null) process 0 reads the file and tells the others
  /// over `comm`, so that all change together. Whether there was a request
  /// (`spec`) or a refusal (`why`).
  bool pollEverywhere(int64_t step, int32_t processRank, whale_rt_comm *comm,
                      const ProcessLayout *processes, std::string &spec,
                      std::string &why);

  /// "" when the path can serve as a control file at the start of a run:
  /// it does not exist yet, or it holds a request already.
  std::string checkAtStart() const;

private:
  std::string requestIn(const std::string &text, std::string &spec) const;

  std::string path, expected;
  Check check;
  /// The size and time of the last file refused, not reported again.
  std::string lastRefused;
};

} // namespace whale

#endif
