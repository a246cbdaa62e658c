//===- AttentionCost.cpp - attention priced as a GPU runs it -------------===//

#include "perfmodel/AttentionCost.h"

#include "perfmodel/DeviceModel.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace whale::perf {

namespace {

/// The GEMM path's cap on a chunk's scores (AttentionPlan.h's
/// kMaxAttentionScores: 256 MiB of fp32).
constexpr int64_t kMaxScores = int64_t(64) << 20;

/// The head widths the fused kernels are built for (FlashPlan.h's
/// flashDim): a head runs in the first that holds it.
int paddedDim(int64_t e) {
  return e <= 64 ? 64 : e <= 128 ? 128 : e <= 256 ? 256 : 0;
}

OpCost elementKernel(double flops, double bytes) {
  OpCost c;
  c.flops = flops;
  c.bytes = bytes;
  return c;
}

/// A product's shape for the tiles and waves of gemmEfficiency, with its
/// own FLOPs and bytes.
OpCost productKernel(double batch, double m, double n, double k, bool bf16,
                     double flops, double bytes) {
  OpCost c;
  c.matmul = true;
  c.bf16 = bf16;
  c.batch = static_cast<int64_t>(batch);
  c.m = static_cast<int64_t>(m);
  c.n = static_cast<int64_t>(n);
  c.k = static_cast<int64_t>(k);
  c.flops = flops;
  c.bytes = bytes;
  return c;
}

/// S = Q K^T then a row kernel's softmax over it, in place, for `n` heads
/// (and P's bf16 copy under amp): both paths of the GEMMs start so.
void gemmScores(std::vector<AttentionKernel> &out, const AttentionShape &a,
                double n, bool bf16, double elt) {
  const double t = a.t, tk = a.tk, e = a.e, scores = n * t * tk;
  out.push_back(AttentionKernel{productKernel(
      n, t, tk, e, bf16, 2 * scores * e, n * (t + tk) * e * elt + scores * 4)});
  out.push_back(AttentionKernel{elementKernel(5 * scores, 8 * scores)});
  if (bf16)
    out.push_back(AttentionKernel{elementKernel(scores, 6 * scores)});
}

/// One chunk of `n` heads of the chunked GEMMs, `launches` chunks alike.
void gemmChunk(std::vector<AttentionKernel> &out, const AttentionShape &a,
               double n, int64_t launches, bool bf16, double elt) {
  const size_t first = out.size();
  const double t = a.t, tk = a.tk, e = a.e, scores = n * t * tk;
  // A product over the scores: [rows, e] out of [rows, cols] by the
  // other operand's [cols, e], the scores read at the operands' width.
  auto throughScores = [&](double rows, double cols) {
    return productKernel(n, rows, e, cols, bf16, 2 * scores * e,
                         scores * elt + n * cols * e * elt + n * rows * e * 4);
  };
  gemmScores(out, a, n, bf16, elt);
  if (!a.backward) {
    out.push_back(AttentionKernel{throughScores(t, tk)}); // O = P V
  } else {
    out.push_back(AttentionKernel{throughScores(tk, t)}); // dV = P^T dO
    out.push_back(AttentionKernel{
        productKernel(n, t, tk, e, bf16, 2 * scores * e,
                      n * (t + tk) * e * elt + scores * 4)}); // dP = dO V^T
    // dS = scale P (dP - D) in place, D = dO . O from the fp32 rows.
    out.push_back(AttentionKernel{elementKernel(4 * scores + 2 * n * t * e,
                                                12 * scores + 8 * n * t * e)});
    if (bf16)
      out.push_back(AttentionKernel{elementKernel(scores, 6 * scores)});
    out.push_back(AttentionKernel{throughScores(t, tk)}); // dQ = dS K
    out.push_back(AttentionKernel{throughScores(tk, t)}); // dK = dS^T Q
  }
  for (size_t i = first; i < out.size(); ++i)
    out[i].launches = launches;
}

/// The chunked GEMMs (CudaDevice::attention, attentionBackward): the full
/// chunks, then the rest of the heads. Sequence-major operands are first
/// permuted to head-major ones and the results back (fp32 transposes that
/// read and write each element once): q, k, v in and the output back, or
/// q, k, v, the output and dout in and dq, dk, dv back.
void gemmPath(std::vector<AttentionKernel> &out, const AttentionShape &a,
              bool bf16, double elt) {
  if (a.sequenceMajor) {
    const double q = double(a.heads) * a.t * a.e,
                 kv = double(a.heads) * a.tk * a.e;
    // Forward: q, k, v, out. Backward: q, k, v, out, dout, dq, dk, dv.
    const std::vector<double> moved =
        a.backward ? std::vector<double>{q, kv, kv, q, q, q, kv, kv}
                   : std::vector<double>{q, kv, kv, q};
    for (double n : moved)
      out.push_back(AttentionKernel{elementKernel(0, 8 * n)});
  }
  const int64_t chunk = gemmPathHeadsPerChunk(a);
  if (const int64_t full = a.heads / chunk; full > 0)
    gemmChunk(out, a, double(chunk), full, bf16, elt);
  if (const int64_t rest = a.heads % chunk; rest > 0)
    gemmChunk(out, a, double(rest), 1, bf16, elt);
}

/// The fused kernels (FlashAttention.cu, FlashAttentionF32.cu): whole
/// tiles of `f` computed, the operands read once each (a query tile's
/// re-reads of K and V come from L2), the output in fp32. The backward's
/// dQ is added in fp32 by every key tile that sees its rows.
void fusedPath(std::vector<AttentionKernel> &out, const AttentionShape &a,
               bool bf16, double elt, const FusedAttentionTiles &f) {
  const double heads = a.heads, t = a.t, tk = a.tk;
  const double q = heads * t * a.e, kv = heads * tk * a.e, rows = heads * t;
  const double operands = (q + 2 * kv) * elt;
  auto computed = [&](const FusedAttentionTiles &g) {
    return heads * double(fusedTilePairs(a, g)) * g.rows * g.keys;
  };
  const FusedAttentionTiles fwd = fusedForwardTiles(a.e);
  // S = Q K^T and O += P V per tile; with the output null, S alone.
  const double forwardPairs = computed(fwd);
  if (!a.backward) {
    out.push_back(AttentionKernel{productKernel(heads, t, fwd.dim, tk, bf16,
                                                forwardPairs * 4 * fwd.dim,
                                                operands + q * 4)});
    return;
  }
  out.push_back(AttentionKernel{
      productKernel(heads, t, fwd.dim, tk, bf16, forwardPairs * 2 * fwd.dim,
                    operands + rows * 4)});                // each row's lse
  out.push_back(AttentionKernel{elementKernel(0, q * 4)}); // dq zeroed
  out.push_back(
      AttentionKernel{elementKernel(2 * q, 8 * q + rows * 4)}); // D = dO . O
  // S, dP, dV, dK, dQ: five products of 2 dim a pair.
  const double pairs = computed(f);
  const double dqAdds = heads * double(fusedTilePairs(a, f)) * f.rows * f.dim;
  out.push_back(AttentionKernel{productKernel(
      heads, tk, f.dim, t, bf16, pairs * 10 * f.dim,
      (2 * q + 2 * kv) * elt + 2 * rows * 4 + 2 * kv * 4 + dqAdds * 8)});
}

} // namespace

bool gpuFusedAttention() {
  const char *v = std::getenv("WHALE_CUDA_FLASH");
  return v && std::strcmp(v, "1") == 0;
}

FusedAttentionTiles fusedForwardTiles(int64_t e) {
  const int dim = paddedDim(e);
  if (dim == 0)
    return {};
  return {64, dim <= 128 ? 64 : 32, dim};
}

FusedAttentionTiles fusedBackwardTiles(int64_t e) {
  const int dim = paddedDim(e);
  if (dim == 0 || dim > 128)
    return {};
  return {64, 64, dim};
}

int64_t fusedTilePairs(const AttentionShape &a, const FusedAttentionTiles &f) {
  if (f.rows <= 0 || f.keys <= 0 || a.t <= 0 || a.tk <= 0)
    return 0;
  const int64_t queryTiles = (a.t + f.rows - 1) / f.rows,
                keyTiles = (a.tk + f.keys - 1) / f.keys;
  if (!a.causal)
    return queryTiles * keyTiles;
  int64_t pairs = 0;
  for (int64_t qt = 0; qt < queryTiles; ++qt) {
    const int64_t lastRow = std::min((qt + 1) * f.rows - 1, a.t - 1);
    pairs += std::min(lastRow / f.keys + 1, keyTiles);
  }
  return pairs;
}

int64_t gemmPathHeadsPerChunk(const AttentionShape &a) {
  const int64_t perHead = a.t * a.tk;
  if (perHead <= 0)
    return a.heads > 0 ? a.heads : 1;
  return std::clamp<int64_t>(kMaxScores / perHead, 1,
                             std::max<int64_t>(1, a.heads));
}

std::vector<AttentionKernel> gpuAttentionKernels(const AttentionShape &a,
                                                 bool bf16, bool fused) {
  std::vector<AttentionKernel> out;
  const double q = double(a.heads) * a.t * a.e,
               kv = double(a.heads) * a.tk * a.e;
  if (q == 0)
    return out;
  if (a.tk == 0) { // no key: the output (or the gradients) filled with 0
    out.push_back(
        AttentionKernel{elementKernel(0, (a.backward ? q + 2 * kv : q) * 4)});
    return out;
  }
  // Under amp each fp32 operand is first copied to bf16 (gemmInputs).
  if (bf16) {
    const double operands[] = {q, kv, kv, q}; // q, k, v; dout for the grad
    for (int i = 0; i < (a.backward ? 4 : 3); ++i)
      out.push_back(
          AttentionKernel{elementKernel(operands[i], 6 * operands[i])});
  }
  const double elt = bf16 ? 2 : 4;
  const FusedAttentionTiles f =
      a.backward ? fusedBackwardTiles(a.e) : fusedForwardTiles(a.e);
  if (fused && f.dim > 0)
    fusedPath(out, a, bf16, elt, f);
  else
    gemmPath(out, a, bf16, elt);
  return out;
}

double gpuAttentionSeconds(const OpCost &cost, const DeviceModel &device) {
  double seconds = 0;
  for (const AttentionKernel &kernel :
       gpuAttentionKernels(cost.attention, cost.bf16, gpuFusedAttention()))
    seconds += double(kernel.launches) * opSeconds(kernel.cost, device);
  return seconds;
}

} // namespace whale::perf
