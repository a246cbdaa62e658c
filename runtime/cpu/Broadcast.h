//===- Broadcast.h - walking an operand as its broadcast shape ---*- C++
//-*-===//

#ifndef WHALE_RUNTIME_CPU_BROADCAST_H
#define WHALE_RUNTIME_CPU_BROADCAST_H

#include "runtime/core/Tensor.h"

namespace whale::rt::cpu {

/// The strides of `operand` read as `full` (NumPy alignment from the last
/// dimension; 0 where the operand has extent 1 or no dimension).
inline std::vector<int64_t> broadcastStrides(const Shape &operand,
                                             const Shape &full) {
  std::vector<int64_t> strides(full.size(), 0);
  int64_t stride = 1;
  for (size_t i = 0; i < operand.size(); ++i) {
    size_t od = operand.size() - 1 - i, fd = full.size() - 1 - i;
    strides[fd] = operand[od] == 1 ? 0 : stride;
    stride *= operand[od];
  }
  return strides;
}

/// The offset into an operand of the first element of row `row` of `full`
/// (a row being the last dimension).
inline int64_t rowOffset(int64_t row, const Shape &full,
                         const std::vector<int64_t> &strides) {
  int64_t offset = 0;
  for (int64_t d = static_cast<int64_t>(full.size()) - 2; d >= 0; --d) {
    offset += (row % full[d]) * strides[d];
    row /= full[d];
  }
  return offset;
}

} // namespace whale::rt::cpu

#endif
