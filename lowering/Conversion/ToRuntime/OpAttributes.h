//===- OpAttributes.h - op attributes as runtime arguments -----*- C++ -*-===//
//
// Attributes that an op and its gradient share, in the form the runtime's
// calls take them.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_CONVERSION_TORUNTIME_OPATTRIBUTES_H
#define WHALE_LOWERING_CONVERSION_TORUNTIME_OPATTRIBUTES_H

#include "lowering/Conversion/ToRuntime/RuntimeCalls.h"

namespace whale {

/// An axis counted from the end (negative) as one from the front of `v`'s
/// type. The attribute's getter hands an i64 back as unsigned.
inline int64_t axisIn(uint64_t attr, mlir::Value v) {
  int64_t axis = static_cast<int64_t>(attr);
  return axis < 0
             ? axis + llvm::cast<mlir::RankedTensorType>(v.getType()).getRank()
             : axis;
}

/// whale_rt_attention's `form` flags for an attention's attributes.
inline int32_t attentionForm(bool causal, bool sequenceMajor) {
  return (causal ? WHALE_RT_ATTENTION_CAUSAL : 0) |
         (sequenceMajor ? WHALE_RT_ATTENTION_SEQUENCE_MAJOR : 0);
}

/// A convolution's {strideH, strideW, padH, padW, dilationH, dilationW,
/// groups}, as whale_rt_conv2d takes it.
template <class ConvLike>
mlir::Value convGeometry(ConvLike op, RuntimeCalls &rt) {
  llvm::ArrayRef<int64_t> s = op.getStride(), p = op.getPadding(),
                          d = op.getDilation();
  return rt.i64Array({s[0], s[1], p[0], p[1], d[0], d[1],
                      static_cast<int64_t>(op.getGroups())});
}

/// A pooling's {kernelH, kernelW, strideH, strideW, padH, padW}.
template <class PoolLike>
mlir::Value poolGeometry(PoolLike op, RuntimeCalls &rt) {
  llvm::ArrayRef<int64_t> k = op.getKernel(), s = op.getStride(),
                          p = op.getPadding();
  return rt.i64Array({k[0], k[1], s[0], s[1], p[0], p[1]});
}

inline mlir::Value poolKind(llvm::StringRef kind, RuntimeCalls &rt) {
  return rt.i32(kind == "max" ? WHALE_RT_POOL_MAX : WHALE_RT_POOL_AVG);
}

} // namespace whale

#endif // WHALE_LOWERING_CONVERSION_TORUNTIME_OPATTRIBUTES_H
