//===- TokenDataset.h - a pre-tokenized corpus, memory-mapped ----*- C++
//-*-===//
//
// How large runs keep their corpora (nanoGPT's train.bin, Megatron's
// indexed data): one flat file of token ids, uint16 or uint32, little
// endian, mapped into memory and never read whole. Sample i is the window
// of `seq` tokens from i * seq, its targets the same window shifted by one,
// as TextDataset cuts bytes.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_DATA_TOKENDATASET_H
#define WHALE_RUNTIME_DATA_TOKENDATASET_H

#include "runtime/core/Status.h"
#include "runtime/data/MappedFile.h"

#include <cstdint>
#include <string>

namespace whale::rt {

class TokenDataset {
public:
  /// Maps `path` of `dtype` ("uint16" or "uint32"). Fails with the path and
  /// the reason: missing, not a regular file, a size that is not whole
  /// tokens, or fewer than seq + 1 tokens.
  static Status open(const std::string &path, const std::string &dtype,
                     int64_t seq, TokenDataset &out);

  /// The same over `size` bytes the caller keeps alive (nothing mapped):
  /// what open() checks, for the fuzzer and for hosts holding a corpus.
  static Status view(const unsigned char *data, size_t size,
                     const std::string &name, const std::string &dtype,
                     int64_t seq, TokenDataset &out);

  int64_t numSamples() const { return samples; }
  int64_t numTokens() const { return tokens; }

  /// Writes sample `index`'s inputs and targets (seq tokens each); an id
  /// past 2^31 - 1 (uint32 only) is an error naming its place.
  Status sample(int64_t index, int32_t *inputs, int32_t *targets) const;

private:
  MappedFile file; ///< what open() mapped (nothing for a view)
  std::string path;
  const unsigned char *data = nullptr;
  int width = 2; ///< bytes per token
  int64_t seq = 0, tokens = 0, samples = 0;
};

} // namespace whale::rt

#endif
