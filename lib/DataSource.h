//===- DataSource.h - the train block's data, step by step --------*- C++
//-*-===//

#ifndef WHALE_LIB_DATASOURCE_H
#define WHALE_LIB_DATASOURCE_H

#include "runtime/WhaleRuntime.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <memory>
#include <string>
#include <vector>

namespace whale {

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
};

/// The source the model's train block names (text, tokens or synthetic),
/// checked against the model's inputs; null with `error` when they do not fit.
/// `key` names the train block's entry: "data", or "eval_data" for the
/// held-out samples.
std::unique_ptr<DataSource> makeDataSource(mlir::func::FuncOp model,
                                           std::string &error,
                                           const char *key = "data");

} // namespace whale

#endif
