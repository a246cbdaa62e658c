//===- ElementTypes.h - tensors' element types, for amp's passes -*- C++
//-*-===//
//
// What amp's passes and the lowering's bf16 check ask of a type: its
// element type, whether that is bf16, and the same shape with another one.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_LOWERING_ELEMENTTYPES_H
#define WHALE_LOWERING_ELEMENTTYPES_H

#include "mlir/IR/BuiltinTypes.h"

namespace whale {

/// The element type of a ranked tensor; null for any other type.
inline mlir::Type elementOf(mlir::Type t) {
  auto r = mlir::dyn_cast<mlir::RankedTensorType>(t);
  return r ? r.getElementType() : mlir::Type();
}

/// Whether `t` is a ranked tensor of bf16 (amp's storage).
inline bool isBf16Tensor(mlir::Type t) {
  mlir::Type e = elementOf(t);
  return e && e.isBF16();
}

/// A ranked tensor's shape with `element` as its element type.
inline mlir::RankedTensorType withElement(mlir::Type t, mlir::Type element) {
  return mlir::RankedTensorType::get(
      mlir::cast<mlir::RankedTensorType>(t).getShape(), element);
}

} // namespace whale

#endif
