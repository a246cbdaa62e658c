//===- ComposedBf16Matmul.cpp - amp's bf16 matmuls from fp32 kernels ------===//
//
// What a device without bf16 GEMMs runs for a matmul on amp's storage, and
// the reference one with them is tested against: the bf16 operands widened
// into fp32 scratch (exactly: every bf16 value is an fp32 value), the fp32
// kernel, then each result rounded once to bf16 where it is stored so. That
// is what a tensor-core GEMM computes: exact products of bf16 values summed
// in fp32, rounded at the store. Only the order of the sums may differ.
//
//===----------------------------------------------------------------------===//

#include "runtime/ops/Bf16Scratch.h"

namespace whale::rt {

using namespace bf16scratch;

Status Device::matmulBf16(View<const uint16_t> a, View<const uint16_t> b,
                          MixedOut out, bool transA, bool transB) {
  Tensor wa, wb, scratch;
  View<float> target;
  if (Status st = widen(*this, a, wa); !st)
    return st;
  if (Status st = widen(*this, b, wb); !st)
    return st;
  if (Status st = fp32Target(*this, out, scratch, target); !st)
    return st;
  if (Status st =
          matmul(wa.cview<float>(), wb.cview<float>(), target, transA, transB);
      !st)
    return st;
  return finish(*this, out, target);
}

Status Device::matmulBf16Backward(View<const uint16_t> a,
                                  View<const uint16_t> b,
                                  View<const uint16_t> dout, MixedOut *da,
                                  MixedOut *db, bool transA, bool transB) {
  Tensor wa, wb, wd, sa, sb;
  View<float> ta, tb;
  if (Status st = widen(*this, a, wa); !st)
    return st;
  if (Status st = widen(*this, b, wb); !st)
    return st;
  if (Status st = widen(*this, dout, wd); !st)
    return st;
  if (da)
    if (Status st = fp32Target(*this, *da, sa, ta); !st)
      return st;
  if (db)
    if (Status st = fp32Target(*this, *db, sb, tb); !st)
      return st;
  if (Status st = matmulBackward(wa.cview<float>(), wb.cview<float>(),
                                 wd.cview<float>(), da ? &ta : nullptr,
                                 db ? &tb : nullptr, transA, transB);
      !st)
    return st;
  if (da)
    if (Status st = finish(*this, *da, ta); !st)
      return st;
  if (db)
    return finish(*this, *db, tb);
  return Status::ok();
}

} // namespace whale::rt
