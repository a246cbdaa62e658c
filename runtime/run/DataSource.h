//===- DataSource.h - the train block's data, step by step --------*- C++
//-*-===//
//
// A data source is opened from a DataSpec, plain data: the JIT-driven
// loops read the spec off the model's train block (lib/compile/DataSpec.h), the
// ahead-of-time runner off a compiled plan's manifest.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_RUN_DATASOURCE_H
#define WHALE_RUNTIME_RUN_DATASOURCE_H

#include "runtime/WhaleRuntime.h"

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace whale {

/// A tensor's element type (WHALE_RT_F32 or WHALE_RT_I32) and shape.
struct TensorSpec {
  int32_t dtype = WHALE_RT_F32;
  std::vector<int64_t> shape;
  bool operator==(const TensorSpec &o) const {
    return dtype == o.dtype && shape == o.shape;
  }
};

/// What a train block's data names, its paths resolved.
struct DataSpec {
  /// "text", "tokens", "arrays" or "synthetic".
  std::string kind = "synthetic";
  /// text and tokens: the corpus; arrays: the .npy features and labels.
  std::string path, features, labels;
  std::string dtype; ///< of a token file: "uint16" or "uint32"
  int64_t seq = 1, batch = 1;
  uint64_t seed = 0;
  /// synthetic: the classes of the cross entropy that reads the labels.
  int64_t classes = 0;
  /// The model's inputs the source fills.
  std::vector<TensorSpec> inputs;
};

/// Feeds one step's global batch into the model's input tensors. The batch
/// of a step is a function of the seed and the step alone, so every plan and
/// every resumed run sees the same samples in the same order.
class DataSource {
public:
  virtual ~DataSource() = default;
  /// "" when it filled them, else why not (a damaged corpus).
  virtual std::string fill(int64_t step,
                           std::vector<whale_rt_tensor *> &inputs) = 0;
  /// The samples `fill` puts in step `step`'s batch, row by row (their
  /// indices in the dataset; synthetic samples are numbered as drawn).
  virtual std::vector<int64_t> samples(int64_t step) = 0;
  /// Samples in one epoch (0 when the source has no end).
  virtual int64_t epochSamples() const = 0;
  /// After a fill that gave an error: whether the source asked the run to
  /// end before that step, as a stop does (the host's data ran out), rather
  /// than failing it.
  virtual bool endsRun() const { return false; }
};

/// The source `spec` names, checked against its inputs; null with `error`
/// when the files cannot be read or do not fit.
std::unique_ptr<DataSource> openDataSource(const DataSpec &spec,
                                           std::string &error);

} // namespace whale

#endif
