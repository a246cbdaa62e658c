//===- SampleLog.h - which samples each replica trained on -------*- C++
//-*-===//
//
// `whale run --log-samples FILE`: one JSON line per step, the dataset
// indices of the rows each data-parallel replica computed on, in replica
// order (`{"step": 3, "replicas": [[12, 7], [40, 3]]}`). Read in order, the
// rows are the data order's positions, so a log shows that every sample of
// an epoch was trained on exactly once, across resizes and resumes too.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_RUN_SAMPLELOG_H
#define WHALE_RUNTIME_RUN_SAMPLELOG_H

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

namespace whale {

class SampleLog {
public:
  /// Opens `path` (nothing when empty), appending when resuming; "" or why
  /// not.
  std::string open(const std::string &path, bool resuming) {
    this->path = path;
    if (path.empty())
      return "";
    out.open(path, resuming ? std::ios::app : std::ios::trunc);
    return out ? "" : "cannot write the sample log '" + path + "'";
  }

  /// Writes step `step`'s line: `samples` (the global batch's, row by row)
  /// cut into the replicas' `rows` in order.
  std::string write(int64_t step, const std::vector<int64_t> &samples,
                    const std::vector<int64_t> &rows) {
    if (!out.is_open())
      return "";
    out << "{\"step\": " << step << ", \"replicas\": [";
    size_t at = 0;
    for (size_t r = 0; r < rows.size(); ++r) {
      out << (r ? ", [" : "[");
      for (int64_t k = 0; k < rows[r] && at < samples.size(); ++k, ++at)
        out << (k ? ", " : "") << samples[at];
      out << "]";
    }
    out << "]}\n" << std::flush;
    return out ? ""
               : "cannot write the sample log '" + path +
                     "': " + std::strerror(errno);
  }

private:
  std::string path;
  std::ofstream out;
};

} // namespace whale

#endif
