//===- FuzzTokens.cpp - libFuzzer target: pre-tokenized corpora -----------===//
//
// A corpus may come from anywhere: the first byte picks the dtype and the
// window (seq 1..64), the rest is the file. Any bytes must give samples or
// a Status, never a crash or a read past the data.
//
//===----------------------------------------------------------------------===//

#include "runtime/data/TokenDataset.h"

#include <cstddef>
#include <cstdint>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (size < 1)
    return 0;
  const char *dtype = (data[0] & 1) ? "uint32" : "uint16";
  int64_t seq = 1 + (data[0] >> 2);
  whale::rt::TokenDataset ds;
  if (!whale::rt::TokenDataset::view(data + 1, size - 1, "fuzz", dtype, seq,
                                     ds))
    return 0;
  std::vector<int32_t> in(static_cast<size_t>(seq)), tg(in.size());
  for (int64_t i = 0; i < ds.numSamples(); ++i)
    (void)ds.sample(i, in.data(), tg.data());
  (void)ds.sample(ds.numSamples(), in.data(), tg.data()); // past the end
  return 0;
}
