//===- CApiBatchNorm.cpp - the C ABI's batch normalization ----------------===//
//
// Statistics of the whole batch on every plan: the device sums this rank's
// rows per channel, the replicas of the rank's stage add their sums (and
// their element counts) over the communicator, and the host turns the
// totals into the per-channel coefficients of the device's elementwise
// passes. Ranks that share rows each add the same sums and the same count,
// so the ratios hold there too; the unbiased variance divides the count by
// the copies. A context bound to no communicator (one
// device, or `whale profile` timing the op alone) keeps its own sums.
//
//===----------------------------------------------------------------------===//

#include "runtime/capi/CApiInternal.h"

#include <cmath>

using namespace whale::rt;
using namespace whale::rt::capi;

namespace {

/// Adds `sums` over the replicas of ctx's stage, in place.
Status sumOverReplicas(whale_rt_context *ctx, std::vector<double> &sums) {
  if (!ctx->comm)
    return Status::ok();
  std::vector<int> ranks;
  groupRanks(ctx, WHALE_RT_GROUP_REPLICAS, ranks);
  if (ranks.size() <= 1)
    return Status::ok();
  if (Status st = settleStarted(ctx, ranks); !st)
    return st;
  CommScope scope(ctx, "batch_norm_stats");
  return ctx->comm->allReduce(ctx->rank, ranks, DType::F64, sums.data(),
                              static_cast<int64_t>(sums.size()));
}

/// A [C] tensor's floats on the host, and back.
Status readVector(whale_rt_context *ctx, whale_rt_tensor *t,
                  std::vector<float> &out) {
  out.resize(static_cast<size_t>(t->tensor.numel()));
  return ctx->device->copyToHost(out.data(), t->tensor.raw(),
                                 t->tensor.bytes());
}
Status writeVector(whale_rt_context *ctx, whale_rt_tensor *t,
                   const std::vector<float> &v) {
  return ctx->device->copyFromHost(t->tensor.raw(), v.data(),
                                   t->tensor.bytes());
}

/// x [N, C, ...] and per-channel tensors [C]; the count of a channel's
/// elements on this rank.
whale_rt_status checkChannels(
    whale_rt_context *ctx, const char *op, whale_rt_tensor *x,
    std::initializer_list<std::pair<const char *, whale_rt_tensor *>> vectors,
    int64_t &channels, int64_t &count) {
  const Shape &sx = shapeOf(x);
  if (sx.size() < 2)
    return ctx->invalid(std::string(op) + ": x must be [N, C, ...], got " +
                        shapeString(sx));
  channels = sx[1];
  count = channels ? x->tensor.numel() / channels : 0;
  for (const auto &[name, t] : vectors)
    if (shapeOf(t) != Shape{channels})
      return ctx->invalid(std::string(op) + ": '" + name + "' is " +
                          shapeString(shapeOf(t)) + ", expected [" +
                          std::to_string(channels) + "]");
  return WHALE_RT_OK;
}

} // namespace

extern "C" {

whale_rt_status whale_rt_batch_norm(whale_rt_context *ctx, whale_rt_tensor *x,
                                    whale_rt_tensor *gamma,
                                    whale_rt_tensor *beta,
                                    whale_rt_tensor *running_mean,
                                    whale_rt_tensor *running_var,
                                    double momentum, double eps,
                                    int64_t row_copies, whale_rt_tensor *y,
                                    whale_rt_tensor *mean,
                                    whale_rt_tensor *invstd) {
  return traced(ctx, "batch_norm", {y}, [&]() -> whale_rt_status {
    if (whale_rt_status s = needF32(ctx, "batch_norm",
                                    {{"x", x},
                                     {"gamma", gamma},
                                     {"beta", beta},
                                     {"running_mean", running_mean},
                                     {"running_var", running_var},
                                     {"y", y},
                                     {"mean", mean},
                                     {"invstd", invstd}}))
      return s;
    int64_t channels, count;
    if (whale_rt_status s = checkChannels(ctx, "batch_norm", x,
                                          {{"gamma", gamma},
                                           {"beta", beta},
                                           {"running_mean", running_mean},
                                           {"running_var", running_var},
                                           {"mean", mean},
                                           {"invstd", invstd}},
                                          channels, count))
      return s;
    if (whale_rt_status s = needShape(ctx, "batch_norm", y, shapeOf(x)))
      return s;
    if (!(eps > 0) || !(momentum >= 0 && momentum <= 1) || row_copies < 1)
      return ctx->invalid("batch_norm: needs eps > 0, momentum in [0, 1] and "
                          "row_copies >= 1");
    const size_t c = static_cast<size_t>(channels);
    Device &dev = *ctx->device;
    std::vector<float> mu(c), var(c), g, b;
    if (Status st = readVector(ctx, gamma, g); !st)
      return ctx->fail(st);
    if (Status st = readVector(ctx, beta, b); !st)
      return ctx->fail(st);
    double total = 0; // the batch's elements per channel, every rank's
    if (ctx->training) {
      // The mean first, then the squares about it: no cancellation.
      std::vector<float> local(c);
      std::vector<double> sums(c + 1);
      if (Status st = dev.channelSums(x->tensor.cview<float>(), nullptr,
                                      local.data());
          !st)
        return ctx->fail(st);
      for (size_t i = 0; i < c; ++i)
        sums[i] = local[i];
      sums[c] = static_cast<double>(count);
      if (Status st = sumOverReplicas(ctx, sums); !st)
        return ctx->fail(st);
      total = sums[c];
      if (!(total > 0))
        return ctx->invalid("batch_norm: the batch has no rows");
      for (size_t i = 0; i < c; ++i)
        mu[i] = static_cast<float>(sums[i] / total);
      if (Status st = dev.channelSums(x->tensor.cview<float>(), mu.data(),
                                      local.data());
          !st)
        return ctx->fail(st);
      sums.assign(local.begin(), local.end());
      if (Status st = sumOverReplicas(ctx, sums); !st)
        return ctx->fail(st);
      for (size_t i = 0; i < c; ++i)
        var[i] = static_cast<float>(sums[i] / total);
    } else {
      if (Status st = readVector(ctx, running_mean, mu); !st)
        return ctx->fail(st);
      if (Status st = readVector(ctx, running_var, var); !st)
        return ctx->fail(st);
    }
    std::vector<float> inv(c), scale(c);
    for (size_t i = 0; i < c; ++i) {
      inv[i] = static_cast<float>(1.0 / std::sqrt(double(var[i]) + eps));
      scale[i] = inv[i] * g[i];
    }
    if (Status st = dev.channelAffine(x->tensor.cview<float>(), mu.data(),
                                      scale.data(), b.data(),
                                      y->tensor.view<float>());
        !st)
      return ctx->fail(st);
    if (Status st = writeVector(ctx, mean, mu); !st)
      return ctx->fail(st);
    if (Status st = writeVector(ctx, invstd, inv); !st)
      return ctx->fail(st);
    if (!ctx->training || momentum == 0)
      return WHALE_RT_OK;
    // The running statistics move toward the batch's, its variance
    // unbiased (n / (n - 1)), as PyTorch's do.
    std::vector<float> rm, rv;
    if (Status st = readVector(ctx, running_mean, rm); !st)
      return ctx->fail(st);
    if (Status st = readVector(ctx, running_var, rv); !st)
      return ctx->fail(st);
    const double n = total / static_cast<double>(row_copies);
    const double unbias = n > 1 ? n / (n - 1) : 1.0;
    for (size_t i = 0; i < c; ++i) {
      rm[i] = static_cast<float>((1 - momentum) * rm[i] + momentum * mu[i]);
      rv[i] = static_cast<float>((1 - momentum) * rv[i] +
                                 momentum * unbias * var[i]);
    }
    if (Status st = writeVector(ctx, running_mean, rm); !st)
      return ctx->fail(st);
    return ran(ctx, writeVector(ctx, running_var, rv));
  });
}

whale_rt_status whale_rt_batch_norm_grad(whale_rt_context *ctx,
                                         whale_rt_tensor *x,
                                         whale_rt_tensor *gamma,
                                         whale_rt_tensor *mean,
                                         whale_rt_tensor *invstd,
                                         whale_rt_tensor *dy,
                                         whale_rt_tensor *dx,
                                         whale_rt_tensor *dgamma,
                                         whale_rt_tensor *dbeta) {
  return traced(
      ctx, "batch_norm_grad", {dx, dgamma, dbeta}, [&]() -> whale_rt_status {
        if (whale_rt_status s = needF32(ctx, "batch_norm_grad",
                                        {{"x", x},
                                         {"gamma", gamma},
                                         {"mean", mean},
                                         {"invstd", invstd},
                                         {"dy", dy},
                                         {"dx", dx},
                                         {"dgamma", dgamma},
                                         {"dbeta", dbeta}}))
          return s;
        int64_t channels, count;
        if (whale_rt_status s = checkChannels(ctx, "batch_norm_grad", x,
                                              {{"gamma", gamma},
                                               {"mean", mean},
                                               {"invstd", invstd},
                                               {"dgamma", dgamma},
                                               {"dbeta", dbeta}},
                                              channels, count))
          return s;
        if (whale_rt_status s = needShape(ctx, "batch_norm_grad", dy, shapeOf(x)))
          return s;
        if (whale_rt_status s = needShape(ctx, "batch_norm_grad", dx, shapeOf(x)))
          return s;
        const size_t c = static_cast<size_t>(channels);
        std::vector<float> g, mu, inv;
        if (Status st = readVector(ctx, gamma, g); !st)
          return ctx->fail(st);
        if (Status st = readVector(ctx, mean, mu); !st)
          return ctx->fail(st);
        if (Status st = readVector(ctx, invstd, inv); !st)
          return ctx->fail(st);
        // This rank's sum(dy) and sum(dy xhat): its dbeta and dgamma (the
        // gradient sync adds the replicas'), and with the others' the
        // whole batch's means that dx needs.
        std::vector<float> local(2 * c);
        if (Status st = ctx->device->channelGradSums(
                x->tensor.cview<float>(), dy->tensor.cview<float>(), mu.data(),
                inv.data(), local.data());
            !st)
          return ctx->fail(st);
        std::vector<double> sums(local.begin(), local.end());
        sums.push_back(static_cast<double>(count));
        if (Status st = sumOverReplicas(ctx, sums); !st)
          return ctx->fail(st);
        const double total = sums[2 * c];
        if (!(total > 0))
          return ctx->invalid("batch_norm_grad: the batch has no rows");
        // dx = gamma invstd (dy - mean(dy) - xhat mean(dy xhat)).
        std::vector<float> a(c), b(c), d(c);
        for (size_t i = 0; i < c; ++i) {
          double scale = double(g[i]) * inv[i];
          a[i] = static_cast<float>(scale);
          b[i] = static_cast<float>(-scale * inv[i] * sums[c + i] / total);
          d[i] = static_cast<float>(-scale * sums[i] / total);
        }
        if (Status st = ctx->device->channelGradInput(
                x->tensor.cview<float>(), dy->tensor.cview<float>(), mu.data(),
                a.data(), b.data(), d.data(), dx->tensor.view<float>());
            !st)
          return ctx->fail(st);
        std::vector<float> dg(local.begin() + c, local.end()),
            db(local.begin(), local.begin() + c);
        if (Status st = writeVector(ctx, dgamma, dg); !st)
          return ctx->fail(st);
        return ran(ctx, writeVector(ctx, dbeta, db));
      });
}

} // extern "C"
