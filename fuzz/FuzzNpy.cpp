//===- FuzzNpy.cpp - libFuzzer target: numpy .npy arrays ------------------===//
//
// An array file may come from anywhere; any bytes must give an array whose
// every element reads back, or a Status, never a crash or a read past the
// data.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/NpyArray.h"

#include <cstddef>
#include <cstdint>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  whale::rt::NpyArray a;
  if (!whale::rt::NpyArray::view(data, size, "fuzz", a))
    return 0;
  int64_t n = 1;
  for (int64_t d : a.shape())
    n *= d;
  volatile double sum = 0;
  for (int64_t i = 0; i < n; ++i)
    sum = sum + a.floatAt(i) + double(a.intAt(i));
  return 0;
}
