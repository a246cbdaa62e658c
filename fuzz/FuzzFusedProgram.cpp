//===- FuzzFusedProgram.cpp - libFuzzer target: element programs ----------===//
//
// The words whale_rt_fused hands a GPU come from whoever calls the C ABI.
// Any bytes, read as int64 words, must parse into a program or give a
// reason; a parsed program, run on operands of the sizes fitsOperands
// accepts, must keep every thread inside them.
//
//===----------------------------------------------------------------------===//

#include "runtime/ops/ElementProgram.h"

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  namespace fused = whale::rt::fused;
  std::vector<int64_t> words(size / sizeof(int64_t));
  if (!words.empty())
    std::memcpy(words.data(), data, words.size() * sizeof(int64_t));
  fused::Layout l;
  std::vector<fused::Instr> code;
  std::string why;
  if (!fused::parse(words.data(), static_cast<int64_t>(words.size()), l, code,
                    why))
    return 0;
  // Run only what is small enough to run quickly (a program of rows has
  // its rows' width beside its threads).
  int64_t points = 1;
  for (int d = 0; d < l.rank; ++d)
    points *= l.extents[d];
  if (points > (1 << 14))
    return 0;
  const int count = l.inputs + l.outputs;
  std::vector<std::vector<float>> operands(count);
  std::vector<int64_t> sizes(count);
  std::vector<const void *> addresses(count);
  for (int i = 0; i < count; ++i) {
    sizes[i] = fused::operandElements(l, i);
    operands[i].assign(static_cast<size_t>(sizes[i]), 0.5f);
    addresses[i] = operands[i].data();
  }
  if (!fused::fitsOperands(l, sizes.data(), count, why))
    __builtin_trap(); // its own sizes must fit
  for (int64_t t = 0; t < l.threads; ++t)
    fused::runOnHost(l, code.data(), static_cast<int>(code.size()),
                     addresses.data(), t);
  return 0;
}
