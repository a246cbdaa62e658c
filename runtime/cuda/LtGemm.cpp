//===- LtGemm.cpp - planned GEMMs through cuBLASLt ------------------------===//

#include "runtime/cuda/LtGemm.h"

#include <string>

namespace whale::rt::cuda {

namespace {

Status ltFailed(cublasStatus_t s, const char *what) {
  if (s == CUBLAS_STATUS_SUCCESS)
    return Status::ok();
  return Status::internal(std::string(what) + ": cuBLASLt status " +
                          std::to_string(static_cast<int>(s)));
}

template <class T>
Status setDesc(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t attr,
               const T &value) {
  return ltFailed(cublasLtMatmulDescSetAttribute(d, attr, &value, sizeof(T)),
                  "cublasLtMatmulDescSetAttribute");
}

/// A layout of `m` as stored, with its batch where it has one.
Status makeLayout(const LtMatrix &m, cudaDataType type,
                  cublasLtMatrixLayout_t &out) {
  if (Status st = ltFailed(
          cublasLtMatrixLayoutCreate(&out, type, static_cast<uint64_t>(m.rows),
                                     static_cast<uint64_t>(m.cols), m.ld),
          "cublasLtMatrixLayoutCreate");
      !st)
    return st;
  if (m.batch == 1)
    return Status::ok();
  int32_t count = static_cast<int32_t>(m.batch);
  int64_t stride = m.stride;
  if (Status st = ltFailed(
          cublasLtMatrixLayoutSetAttribute(
              out, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &count, sizeof(count)),
          "cublasLtMatrixLayoutSetAttribute");
      !st)
    return st;
  return ltFailed(cublasLtMatrixLayoutSetAttribute(
                      out, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride,
                      sizeof(stride)),
                  "cublasLtMatrixLayoutSetAttribute");
}

/// The epilogue's buffers on `desc`.
Status pointEpilogue(cublasLtMatmulDesc_t desc, const LtEpilogueArgs &e) {
  if (ltUsesBias(e.kind))
    if (Status st = setDesc(desc, CUBLASLT_MATMUL_DESC_BIAS_POINTER, e.bias);
        !st)
      return st;
  if (!ltUsesAux(e.kind))
    return Status::ok();
  return setDesc(desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, e.aux);
}

cublasLtEpilogue_t ltEpilogueOf(LtEpilogue e) {
  switch (e) {
  case LtEpilogue::None:
    return CUBLASLT_EPILOGUE_DEFAULT;
  case LtEpilogue::Bias:
    return CUBLASLT_EPILOGUE_BIAS;
  case LtEpilogue::GeluBias:
    return CUBLASLT_EPILOGUE_GELU_BIAS;
  case LtEpilogue::GeluAuxBias:
    return CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
  case LtEpilogue::BgradA:
    return CUBLASLT_EPILOGUE_BGRADA;
  case LtEpilogue::BgradB:
    return CUBLASLT_EPILOGUE_BGRADB;
  case LtEpilogue::Dgelu:
    return CUBLASLT_EPILOGUE_DGELU;
  }
  return CUBLASLT_EPILOGUE_DEFAULT;
}

} // namespace

LtGemms::~LtGemms() {
  for (auto &[key, plan] : plans)
    destroy(plan);
  if (handle)
    cublasLtDestroy(handle);
}

Status LtGemms::open() {
  return ltFailed(cublasLtCreate(&handle), "cublasLtCreate");
}

void LtGemms::setWorkspace(void *data, size_t bytes) {
  workspace = data;
  workspaceBytes = bytes;
}

void LtGemms::destroy(Plan &plan) {
  if (plan.desc)
    cublasLtMatmulDescDestroy(plan.desc);
  for (cublasLtMatrixLayout_t l : {plan.first, plan.second, plan.out})
    if (l)
      cublasLtMatrixLayoutDestroy(l);
  plan = Plan();
}

Status LtGemms::choose(const LtKey &key, const GemmCall &g,
                       const LtEpilogueArgs &epilogue, Plan &plan) {
  const cublasComputeType_t compute =
      key.tf32 ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F;
  if (Status st =
          ltFailed(cublasLtMatmulDescCreate(&plan.desc, compute, CUDA_R_32F),
                   "cublasLtMatmulDescCreate");
      !st)
    return st;
  cublasOperation_t opFirst = g.transFirst ? CUBLAS_OP_T : CUBLAS_OP_N;
  cublasOperation_t opSecond = g.transSecond ? CUBLAS_OP_T : CUBLAS_OP_N;
  if (Status st = setDesc(plan.desc, CUBLASLT_MATMUL_DESC_TRANSA, opFirst); !st)
    return st;
  if (Status st = setDesc(plan.desc, CUBLASLT_MATMUL_DESC_TRANSB, opSecond);
      !st)
    return st;
  if (key.epilogue != LtEpilogue::None) {
    const cublasLtEpilogue_t kind = ltEpilogueOf(key.epilogue);
    const cudaDataType biasType = CUDA_R_32F;
    if (Status st = setDesc(plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE, kind);
        !st)
      return st;
    if (ltUsesBias(key.epilogue))
      if (Status st =
              setDesc(plan.desc, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, biasType);
          !st)
        return st;
    if (ltUsesAux(key.epilogue)) {
      // The sum before the GELU (kept, or read for its derivative), laid
      // out as the result: same leading dimension and type.
      const int64_t ld = g.ldOut;
      const cudaDataType auxType = key.bf16Out ? CUDA_R_16BF : CUDA_R_32F;
      if (Status st =
              setDesc(plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, ld);
          !st)
        return st;
      if (Status st = setDesc(
              plan.desc, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_DATA_TYPE, auxType);
          !st)
        return st;
    }
  }
  if (Status st = pointEpilogue(plan.desc, epilogue); !st)
    return st;
  const LtLayouts l = ltLayouts(g);
  const cudaDataType in = key.bf16In ? CUDA_R_16BF : CUDA_R_32F;
  const cudaDataType out = key.bf16Out ? CUDA_R_16BF : CUDA_R_32F;
  if (Status st = makeLayout(l.first, in, plan.first); !st)
    return st;
  if (Status st = makeLayout(l.second, in, plan.second); !st)
    return st;
  if (Status st = makeLayout(l.out, out, plan.out); !st)
    return st;

  cublasLtMatmulPreference_t pref = nullptr;
  if (Status st = ltFailed(cublasLtMatmulPreferenceCreate(&pref),
                           "cublasLtMatmulPreferenceCreate");
      !st)
    return st;
  uint64_t bytes = workspaceBytes;
  uint32_t alignA = key.alignFirst, alignB = key.alignSecond,
           alignC = key.alignOut;
  cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &bytes, sizeof(bytes));
  cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, &alignA,
      sizeof(alignA));
  cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES, &alignB,
      sizeof(alignB));
  cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, &alignC,
      sizeof(alignC));
  cublasLtMatmulPreferenceSetAttribute(
      pref, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES, &alignC,
      sizeof(alignC));
  cublasLtMatmulHeuristicResult_t best{};
  int found = 0;
  cublasStatus_t s = cublasLtMatmulAlgoGetHeuristic(
      handle, plan.desc, plan.first, plan.second, plan.out, plan.out, pref, 1,
      &best, &found);
  cublasLtMatmulPreferenceDestroy(pref);
  // No algorithm (CUBLAS_STATUS_NOT_SUPPORTED) is an answer, not a
  // failure: the call goes to cuBLAS.
  plan.found = s == CUBLAS_STATUS_SUCCESS && found > 0 &&
               best.state == CUBLAS_STATUS_SUCCESS;
  if (plan.found)
    plan.algo = best.algo;
  return Status::ok();
}

Status LtGemms::run(cudaStream_t stream, const GemmCall &g,
                    const LtOperands &ops, bool tf32, bool &ran,
                    const LtEpilogueArgs &epilogue) {
  ran = false;
  // An epilogue reads one bias for the whole product: a single GEMM.
  if (!handle || !ltRuns(g) ||
      (epilogue.kind != LtEpilogue::None && (g.batch != 1 || g.beta != 0)))
    return Status::ok();
  LtKey key = ltKey(g, ops.bf16In, ops.bf16Out, tf32,
                    reinterpret_cast<uintptr_t>(ops.first),
                    reinterpret_cast<uintptr_t>(ops.second),
                    reinterpret_cast<uintptr_t>(ops.out), epilogue.kind);
  auto [it, fresh] = plans.try_emplace(key);
  Plan &plan = it->second;
  if (fresh) {
    if (Status st = choose(key, g, epilogue, plan); !st) {
      destroy(plan);
      plans.erase(it);
      return st;
    }
  }
  if (!plan.found)
    return Status::ok();
  // The buffers are this call's; the descriptor is read when the call is
  // queued.
  if (Status st = pointEpilogue(plan.desc, epilogue); !st)
    return st;
  const float alpha = 1.0f, beta = g.beta;
  if (Status st = ltFailed(cublasLtMatmul(handle, plan.desc, &alpha, ops.first,
                                          plan.first, ops.second, plan.second,
                                          &beta, ops.out, plan.out, ops.out,
                                          plan.out, &plan.algo, workspace,
                                          workspaceBytes, stream),
                           "cublasLtMatmul");
      !st)
    return st;
  ran = true;
  return Status::ok();
}

} // namespace whale::rt::cuda
