//===- Profiler.h - kernel timings as a Chrome trace -------------*- C++
//-*-===//

#ifndef WHALE_RUNTIME_PROFILER_H
#define WHALE_RUNTIME_PROFILER_H

#include "runtime/Status.h"

#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace whale::rt {

/// Collects timed events (a kernel, a collective) on tracks (one per rank,
/// compute and communication apart) and writes them as Chrome trace JSON,
/// which Perfetto and chrome://tracing open. Thread-safe.
class Profiler {
public:
  struct Event {
    std::string name, category;
    int track;
    int64_t startNs, durationNs;
  };

  static int64_t nowNs();

  void record(std::string name, std::string category, int track,
              int64_t startNs, int64_t durationNs);
  /// Names a track ("rank 0 compute") in the trace viewer.
  void nameTrack(int track, std::string name);

  std::vector<Event> events() const;
  std::string chromeTraceJson() const;
  Status writeChromeTrace(const std::string &path) const;

  /// Times a scope: records one event when it ends.
  class Scope {
  public:
    Scope(Profiler *p, std::string name, std::string category, int track)
        : profiler(p), name(std::move(name)), category(std::move(category)),
          track(track), start(p ? nowNs() : 0) {}
    ~Scope() {
      if (profiler)
        profiler->record(std::move(name), std::move(category), track, start,
                         nowNs() - start);
    }

  private:
    Profiler *profiler;
    std::string name, category;
    int track;
    int64_t start;
  };

private:
  mutable std::mutex mutex;
  std::vector<Event> recorded;
  std::vector<std::pair<int, std::string>> trackNames;
  int64_t origin = nowNs();
};

} // namespace whale::rt

#endif
