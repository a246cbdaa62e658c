//===- HostData.cpp - a run's batches filled by the host ------------------===//

#include "lib/train/HostData.h"

#include "lib/compile/DataSpec.h"
#include "runtime/core/Tensor.h"

#include "mlir/IR/BuiltinAttributes.h"

namespace whale {

int64_t HostBatchBuffer::bytes() const { return rt::numElements(shape) * 4; }

namespace {

class HostDataSource : public DataSource {
public:
  HostDataSource(HostBatchFill fill, std::vector<std::string> names)
      : fillBatch(std::move(fill)), names(std::move(names)) {}

  std::string fill(int64_t step,
                   std::vector<whale_rt_tensor *> &inputs) override {
    buffers.resize(inputs.size());
    for (size_t i = 0; i < inputs.size(); ++i) {
      HostBatchBuffer &b = buffers[i];
      whale_rt_tensor *t = inputs[i];
      b.name = i < names.size() ? names[i] : "input" + std::to_string(i);
      b.dtype = whale_rt_tensor_dtype(t) == WHALE_RT_I32 ? "i32" : "f32";
      const int64_t *shape = whale_rt_tensor_shape(t);
      b.shape.assign(shape, shape + whale_rt_tensor_rank(t));
      b.data = whale_rt_tensor_data(t);
      if (!b.data)
        return "the batch's input '" + b.name +
               "' is not in host memory, where the host could fill it";
    }
    if (!b0Rows && !buffers.empty() && !buffers[0].shape.empty())
      b0Rows = buffers[0].shape[0];
    HostBatchOutcome outcome = fillBatch(step, buffers);
    stopAsked = outcome.stop;
    if (outcome.stop)
      return outcome.error.empty() ? "the host's data ended the run"
                                   : outcome.error;
    return outcome.error.empty() ? "" : "the host's data: " + outcome.error;
  }

  std::vector<int64_t> samples(int64_t step) override {
    std::vector<int64_t> rows(static_cast<size_t>(b0Rows));
    for (int64_t r = 0; r < b0Rows; ++r)
      rows[r] = step * b0Rows + r;
    return rows;
  }

  int64_t epochSamples() const override { return 0; }
  bool endsRun() const override { return stopAsked; }

private:
  HostBatchFill fillBatch;
  std::vector<std::string> names;
  std::vector<HostBatchBuffer> buffers;
  int64_t b0Rows = 0;
  bool stopAsked = false;
};

} // namespace

std::unique_ptr<DataSource> runDataSource(mlir::func::FuncOp model,
                                          const TrainOptions &options,
                                          std::string &error) {
  if (!options.data)
    return makeDataSource(model, error);
  std::vector<std::string> names;
  if (auto attr = model->getAttrOfType<mlir::ArrayAttr>("whale.inputs"))
    for (mlir::Attribute a : attr)
      if (auto s = mlir::dyn_cast<mlir::StringAttr>(a))
        names.push_back(s.str());
  return std::make_unique<HostDataSource>(options.data, std::move(names));
}

} // namespace whale
