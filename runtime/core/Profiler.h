//===- Profiler.h - kernel timings as a Chrome trace -------------*- C++
//-*-===//

#ifndef WHALE_RUNTIME_CORE_PROFILER_H
#define WHALE_RUNTIME_CORE_PROFILER_H

#include "runtime/core/Status.h"

#include <atomic>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace whale::rt {

/// Collects timed events (a kernel, a collective) on tracks and writes them
/// as Chrome trace JSON, which Perfetto and chrome://tracing open: track 2r
/// is rank r's compute and 2r + 1 its communication, shown as one process
/// per rank with two threads. The simulator writes its predicted timelines
/// through the same class, so a run and its prediction open side by side.
/// Thread-safe.
class Profiler {
public:
  struct Event {
    std::string name, category;
    int track;
    int64_t startNs, durationNs;
    int64_t site = -1; ///< the op's place in its program; -1: not known
  };

  static int64_t nowNs();

  void record(std::string name, std::string category, int track,
              int64_t startNs, int64_t durationNs, int64_t site = -1);
  /// Names a track ("rank 0 compute") in the trace viewer.
  void nameTrack(int track, std::string name);
  /// Names the process of rank `rank` (its tracks 2 rank and 2 rank + 1).
  void nameRank(int rank, std::string name);
  /// Times are taken from `originNs` (default: when the profiler was made).
  void setOrigin(int64_t originNs) { origin = originNs; }
  /// Whether the traced ops' outputs are checked for NaN and infinity (the
  /// default); off, a traced step runs as an untraced one, which profiling
  /// needs.
  void setCheckFinite(bool on) { checks = on; }
  bool checksFinite() const { return checks; }
  /// While paused, scopes time nothing and traced ops run as untraced ones
  /// do; record() still records (the driver's steps). A run pauses its
  /// trace between steps, so that steps traced and untraced alternate in
  /// one process: what tracing costs, measured on the same machine state.
  void setPaused(bool on) { pausedNow.store(on, std::memory_order_relaxed); }
  bool paused() const { return pausedNow.load(std::memory_order_relaxed); }

  std::vector<Event> events() const;
  std::string chromeTraceJson() const;
  Status writeChromeTrace(const std::string &path) const;

  /// Times a scope: records one event when it ends.
  class Scope {
  public:
    Scope(Profiler *p, std::string name, std::string category, int track,
          int64_t site = -1)
        : profiler(p && !p->paused() ? p : nullptr), name(std::move(name)),
          category(std::move(category)), track(track), site(site),
          start(profiler ? nowNs() : 0) {}
    ~Scope() {
      if (profiler)
        profiler->record(std::move(name), std::move(category), track, start,
                         nowNs() - start, site);
    }

  private:
    Profiler *profiler;
    std::string name, category;
    int track;
    int64_t site;
    int64_t start;
  };

private:
  mutable std::mutex mutex;
  /// Events in blocks of kBlock, each allocated whole when started: a
  /// traced step records an event per op, and a single vector's growth
  /// would copy all the events so far (megabytes) in the middle of a
  /// step, through the caches the step's ops work in.
  static constexpr size_t kBlock = 4096;
  std::vector<std::vector<Event>> recorded;
  std::vector<std::pair<int, std::string>> trackNames, rankNames;
  int64_t origin = nowNs();
  bool checks = true;
  std::atomic<bool> pausedNow{false};
};

} // namespace whale::rt

#endif
