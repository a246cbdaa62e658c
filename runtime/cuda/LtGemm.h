//===- LtGemm.h - planned GEMMs through cuBLASLt ----------------*- C++ -*-===//
//
// Runs the calls GemmPlan.h plans with cublasLtMatmul: an algorithm chosen
// by cuBLASLt's heuristics once per shape (LtGemmPlan.h's key) and kept
// with its descriptors, a workspace from the device's caching allocator,
// and the call on the device's stream. The classic API chooses inside
// each call, within the small workspace of its handle; cuBLASLt takes the
// workspace we give it, lets the choice be made once and kept, and has the
// epilogues (bias, GELU, their gradients) that fused linear layers run in.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_CUDA_LTGEMM_H
#define WHALE_RUNTIME_CUDA_LTGEMM_H

#include "runtime/core/Status.h"
#include "runtime/cuda/LtGemmPlan.h"

#include <cublasLt.h>
#include <cuda_runtime.h>

#include <unordered_map>

namespace whale::rt::cuda {

/// The operands of one planned call, at their addresses (offsets applied).
struct LtOperands {
  const void *first, *second;
  void *out;
  bool bf16In, bf16Out;
};

/// A call's epilogue and the buffers it reads and writes (fp32): `bias`,
/// one value per row of the column-major result, the bias it adds (Bias,
/// GeluBias, GeluAuxBias) or the gradient it sums (BgradA, BgradB); `aux`,
/// laid out as the result, the sum before the GELU it keeps (GeluAuxBias)
/// or the preactivation whose derivative it applies (Dgelu).
struct LtEpilogueArgs {
  LtEpilogue kind = LtEpilogue::None;
  void *bias = nullptr;
  void *aux = nullptr;
};

class LtGemms {
public:
  LtGemms() = default;
  ~LtGemms();
  LtGemms(const LtGemms &) = delete;
  LtGemms &operator=(const LtGemms &) = delete;

  Status open();
  /// Sets the workspace every later call may use (chosen once: the cached
  /// algorithms were chosen for its size).
  void setWorkspace(void *data, size_t bytes);
  /// Runs `g` on `stream`. `ran` is false, with nothing queued, when
  /// cuBLASLt has no algorithm for it (or ltRuns refuses it): the caller
  /// runs cuBLAS instead, and the refusal is cached too.
  Status run(cudaStream_t stream, const GemmCall &g, const LtOperands &ops,
             bool tf32, bool &ran, const LtEpilogueArgs &epilogue = {});
  /// How many shapes have a chosen algorithm (or a cached refusal).
  size_t cachedShapes() const { return plans.size(); }

private:
  struct Plan {
    cublasLtMatmulDesc_t desc = nullptr;
    cublasLtMatrixLayout_t first = nullptr, second = nullptr, out = nullptr;
    cublasLtMatmulAlgo_t algo{};
    bool found = false;
  };
  Status choose(const LtKey &key, const GemmCall &g,
                const LtEpilogueArgs &epilogue, Plan &plan);
  static void destroy(Plan &plan);

  cublasLtHandle_t handle = nullptr;
  void *workspace = nullptr;
  size_t workspaceBytes = 0;
  std::unordered_map<LtKey, Plan, LtKeyHash> plans;
};

} // namespace whale::rt::cuda

#endif
