//===- Profiler.cpp - kernel timings as a Chrome trace --------------------===//

#include "runtime/core/Profiler.h"

#include "support/JsonString.h"
#include "support/OutputFile.h"

#include <chrono>
#include <cstdio>
#include <cstring>

namespace whale::rt {

int64_t Profiler::nowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void Profiler::record(std::string name, std::string category, int track,
                      int64_t startNs, int64_t durationNs, int64_t site) {
  std::lock_guard<std::mutex> lock(mutex);
  if (recorded.empty() || recorded.back().size() == kBlock) {
    recorded.emplace_back();
    recorded.back().reserve(kBlock);
  }
  recorded.back().push_back(
      {std::move(name), std::move(category), track, startNs, durationNs, site});
}

void Profiler::nameTrack(int track, std::string name) {
  std::lock_guard<std::mutex> lock(mutex);
  trackNames.push_back({track, std::move(name)});
}

void Profiler::nameRank(int rank, std::string name) {
  std::lock_guard<std::mutex> lock(mutex);
  rankNames.push_back({rank, std::move(name)});
}

std::vector<Profiler::Event> Profiler::events() const {
  std::lock_guard<std::mutex> lock(mutex);
  std::vector<Event> all;
  for (const std::vector<Event> &block : recorded)
    all.insert(all.end(), block.begin(), block.end());
  return all;
}

std::string Profiler::chromeTraceJson() const {
  std::lock_guard<std::mutex> lock(mutex);
  std::string out = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  bool first = true;
  auto sep = [&] {
    if (!first)
      out += ",\n";
    first = false;
  };
  // Track t is thread t % 2 of process t / 2 (a rank's compute and
  // communication).
  auto where = [](int track) {
    return "\"pid\": " + std::to_string(track / 2) +
           ", \"tid\": " + std::to_string(track % 2);
  };
  for (const auto &[rank, name] : rankNames) {
    sep();
    out += "{\"ph\": \"M\", \"name\": \"process_name\", " +
           where(2 * rank) + ", \"args\": {\"name\": " + jsonQuote(name) +
           "}}";
  }
  for (const auto &[track, name] : trackNames) {
    sep();
    out += "{\"ph\": \"M\", \"name\": \"thread_name\", " + where(track) +
           ", \"args\": {\"name\": " + jsonQuote(name) + "}}";
  }
  char buf[96];
  for (const std::vector<Event> &block : recorded)
    for (const Event &e : block) {
      sep();
      // Chrome traces count microseconds; keep the nanoseconds as fractions.
      std::snprintf(buf, sizeof buf, "\"ts\": %.3f, \"dur\": %.3f",
                    (e.startNs - origin) / 1e3, e.durationNs / 1e3);
      out += "{\"ph\": \"X\", \"name\": " + jsonQuote(e.name) +
             ", \"cat\": " + jsonQuote(e.category) + ", " + where(e.track) +
             ", " + buf +
             (e.site >= 0
                  ? ", \"args\": {\"site\": " + std::to_string(e.site) + "}"
                  : std::string()) +
             "}";
    }
  return out + "\n]}\n";
}

Status Profiler::writeChromeTrace(const std::string &path) const {
  // Whole or not at all, as every output: a full disk leaves an earlier
  // trace as it was, not a truncated JSON (issue 92 item 7).
  const std::string json = chromeTraceJson();
  if (std::string err = writeFileWhole(path, "the trace", {json}); !err.empty())
    return Status::invalid(err);
  return Status::ok();
}

} // namespace whale::rt
