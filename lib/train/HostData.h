//===- HostData.h - a run's batches filled by the host ------------*- C++
//-*-===//
//
// TrainOptions::data as a DataSource: the host (a Python loop, an
// embedding application) fills each step's global batch into the run's
// own input tensors, which every plan then splits as it splits the
// script's data. The samples are numbered as drawn (step times batch plus
// row): the host's order is the data order.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LIB_TRAIN_HOSTDATA_H
#define WHALE_LIB_TRAIN_HOSTDATA_H

#include "runtime/run/DataSource.h"
#include "whale/Train.h"

#include "mlir/Dialect/Func/IR/FuncOps.h"

#include <memory>
#include <string>

namespace whale {

/// The train data of `model` for a run of `options`: the host's when it
/// gives it, else the train block's (`key`: "data"; "eval_data" always
/// reads the block's). Null with `error` when it cannot be opened.
std::unique_ptr<DataSource> runDataSource(mlir::func::FuncOp model,
                                          const TrainOptions &options,
                                          std::string &error);

} // namespace whale

#endif
