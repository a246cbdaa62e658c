//===- DataSource.cpp - the train block's data, step by step --------------===//

#include "runtime/run/DataSource.h"

#include "runtime/run/SyntheticSource.h"

#include "runtime/data/DataOrder.h"
#include "runtime/data/MappedRead.h"
#include "runtime/data/NpyArray.h"
#include "runtime/data/TextDataset.h"
#include "runtime/data/TokenDataset.h"

#include <algorithm>
#include <cmath>
#include <cstdint>

namespace whale {
namespace {

/// A source of `numSamples` samples in the data order: every kind of file
/// shares it.
class OrderedSource : public DataSource {
public:
  OrderedSource(uint64_t seed, int64_t numSamples, int64_t batch)
      : order(seed, numSamples), batch(batch) {}
  std::vector<int64_t> samples(int64_t step) override {
    return order.slice(step, batch, 0, batch);
  }
  int64_t epochSamples() const override { return order.size(); }

protected:
  rt::DataOrder order;
  int64_t batch;
};

/// Why a read of mapped data stopped (rt::readMapped).
std::string changedWhileRead(const std::string &what) {
  return what + " changed while the run read it (a page of the file is "
                "gone: it was truncated or replaced); restart the run on a "
                "file that stays as it is";
}

/// Windows of a token stream in the data order: inputs [B, T] and targets
/// [B, T] shifted by one. Text and token corpora differ only in where a
/// window's tokens come from.
class WindowSource : public OrderedSource {
public:
  WindowSource(uint64_t seed, int64_t numSamples, int64_t seq, int64_t batch)
      : OrderedSource(seed, numSamples, batch), seq(seq) {}
  std::string fill(int64_t step,
                   std::vector<whale_rt_tensor *> &inputs) override {
    std::vector<int64_t> ids = samples(step);
    auto *in = static_cast<int32_t *>(whale_rt_tensor_data(inputs[0]));
    auto *tg = static_cast<int32_t *>(whale_rt_tensor_data(inputs[1]));
    for (int64_t b = 0; b < batch; ++b)
      if (std::string err = window(ids[b], in + b * seq, tg + b * seq);
          !err.empty())
        return err;
    return "";
  }

protected:
  /// Sample `index`'s seq inputs and targets; "" or why not.
  virtual std::string window(int64_t index, int32_t *inputs,
                             int32_t *targets) = 0;

private:
  int64_t seq;
};

/// Bytes of text.
class TextSource : public WindowSource {
public:
  TextSource(rt::TextDataset ds, uint64_t seed, int64_t batch)
      : WindowSource(seed, ds.numSamples(), ds.seqLength(), batch),
        ds(std::move(ds)) {}

private:
  std::string window(int64_t index, int32_t *inputs,
                     int32_t *targets) override {
    ds.sample(index, inputs, targets);
    return "";
  }
  rt::TextDataset ds;
};

/// A pre-tokenized corpus (rt::TokenDataset).
class TokenSource : public WindowSource {
public:
  TokenSource(rt::TokenDataset ds, uint64_t seed, int64_t seq, int64_t batch)
      : WindowSource(seed, ds.numSamples(), seq, batch), ds(std::move(ds)) {}

private:
  std::string window(int64_t index, int32_t *inputs,
                     int32_t *targets) override {
    rt::Status st;
    if (!rt::readMapped([&] { st = ds.sample(index, inputs, targets); }))
      return changedWhileRead("the token data");
    return st ? "" : st.message();
  }
  rt::TokenDataset ds;
};

/// Rows of a features array [N, ...] (a row of features, or an image's
/// pixels) and a labels array [N] (numpy .npy), in the data order.
class ArraySource : public OrderedSource {
public:
  ArraySource(rt::NpyArray x, rt::NpyArray y, uint64_t seed, int64_t batch,
              int64_t features)
      : OrderedSource(seed, x.shape()[0], batch), x(std::move(x)),
        y(std::move(y)), features(features) {}
  std::string fill(int64_t step,
                   std::vector<whale_rt_tensor *> &inputs) override {
    std::vector<int64_t> ids = samples(step);
    auto *xs = static_cast<float *>(whale_rt_tensor_data(inputs[0]));
    auto *ys = static_cast<int32_t *>(whale_rt_tensor_data(inputs[1]));
    labels.resize(static_cast<size_t>(batch));
    if (!rt::readMapped([&] {
          for (int64_t b = 0; b < batch; ++b) {
            for (int64_t f = 0; f < features; ++f)
              xs[b * features + f] =
                  static_cast<float>(x.floatAt(ids[b] * features + f));
            labels[b] = y.intAt(ids[b]);
          }
        }))
      return changedWhileRead("the arrays");
    for (int64_t b = 0; b < batch; ++b) {
      for (int64_t f = 0; f < features; ++f) {
        // A NaN or an infinity (or a double past float's range) would
        // train into NaN weights, silently: refused where it is.
        const float v = xs[b * features + f];
        if (!std::isfinite(v))
          return "feature " + std::to_string(f) + " of sample " +
                 std::to_string(ids[b]) + " of the features is " +
                 (std::isnan(v) ? "NaN" : "infinite (as f32)") +
                 ": arrays(...) features must be finite numbers";
      }
      if (labels[b] < 0 || labels[b] > INT32_MAX)
        return "label " + std::to_string(labels[b]) + " of sample " +
               std::to_string(ids[b]) + " is not a class index";
      ys[b] = static_cast<int32_t>(labels[b]);
    }
    return "";
  }

private:
  rt::NpyArray x, y;
  int64_t features;
  std::vector<int64_t> labels; ///< a batch's, read before they are checked
};

bool isTokens(const TensorSpec &t) { return t.dtype == WHALE_RT_I32; }

} // namespace

std::unique_ptr<DataSource> openDataSource(const DataSpec &data,
                                           std::string &error) {
  auto fail = [&](std::string msg) {
    error = std::move(msg);
    return nullptr;
  };
  const std::vector<TensorSpec> &in = data.inputs;
  const bool twoTokenInputs =
      in.size() == 2 && isTokens(in[0]) && isTokens(in[1]);
  // Features [B, ...] (a row, or an image) and labels [B].
  const bool featuresAndLabels =
      in.size() == 2 && in[0].dtype == WHALE_RT_F32 &&
      in[0].shape.size() >= 2 && isTokens(in[1]) && in[1].shape.size() == 1;
  int64_t rowElements = 1;
  if (featuresAndLabels)
    for (size_t d = 1; d < in[0].shape.size(); ++d)
      rowElements *= in[0].shape[d];
  if (data.kind == "tokens") {
    rt::TokenDataset ds;
    if (rt::Status st = rt::TokenDataset::open(
            data.path, data.dtype.empty() ? "uint16" : data.dtype, data.seq,
            ds);
        !st)
      return fail(st.message());
    if (!twoTokenInputs)
      return fail(
          "tokens(...) feeds two i32 inputs [B, T]: tokens and targets");
    return std::make_unique<TokenSource>(std::move(ds), data.seed, data.seq,
                                         data.batch);
  }
  if (data.kind == "arrays") {
    rt::NpyArray x, y;
    if (rt::Status st = rt::NpyArray::open(data.features, x); !st)
      return fail(st.message());
    if (rt::Status st = rt::NpyArray::open(data.labels, y); !st)
      return fail(st.message());
    if (!featuresAndLabels)
      return fail("arrays(...) feeds f32 features [B, ...] and i32 labels "
                  "[B]; this model's inputs do not fit");
    // The array's rows must be the model input's rows: [N, F] for [B, F],
    // [N, C, H, W] for images [B, C, H, W].
    const std::vector<int64_t> &xs = x.shape();
    if (xs.size() != in[0].shape.size() || xs[0] < 1 ||
        !std::equal(in[0].shape.begin() + 1, in[0].shape.end(),
                    xs.begin() + 1)) {
      auto dims = [](const std::vector<int64_t> &v) {
        std::string out;
        for (size_t d = 1; d < v.size(); ++d)
          out += ", " + std::to_string(v[d]);
        return out;
      };
      return fail("the features '" + data.features + "' must be [N" +
                  dims(in[0].shape) + "] for the model's input, got " +
                  std::to_string(xs.size()) + " dimensions" +
                  (xs.empty() ? std::string()
                              : " [" + std::to_string(xs[0]) + dims(xs) + "]"));
    }
    if (y.shape() != std::vector<int64_t>{x.shape()[0]} ||
        (y.dtype() != "i4" && y.dtype() != "i8" && y.dtype() != "u1"))
      return fail("the labels '" + data.labels + "' must be integers [" +
                  std::to_string(x.shape()[0]) +
                  "], one per row of the "
                  "features");
    return std::make_unique<ArraySource>(std::move(x), std::move(y), data.seed,
                                         data.batch, rowElements);
  }
  if (data.kind == "text") {
    rt::TextDataset ds;
    if (rt::Status st = rt::TextDataset::open(data.path, data.seq, ds); !st)
      return fail(st.message());
    if (!twoTokenInputs)
      return fail("text(...) feeds two i32 inputs [B, T]: tokens and targets");
    return std::make_unique<TextSource>(std::move(ds), data.seed, data.batch);
  }
  // Features [B, F] and labels [B]; the classes are the width of the
  // logits the labels' cross entropy reads.
  if (!featuresAndLabels || data.classes <= 0)
    return fail(
        "synthetic(...) feeds f32 features [B, ...] and i32 class labels [B] "
        "read by a cross_entropy; this model's inputs do not fit");
  return std::make_unique<SyntheticSource>(data.seed, data.batch, rowElements,
                                           data.classes);
}

} // namespace whale
