//===- TextDataset.h - bytes of text files as training samples ---*- C++
//-*-===//

#ifndef WHALE_RUNTIME_DATA_TEXTDATASET_H
#define WHALE_RUNTIME_DATA_TEXTDATASET_H

#include "runtime/core/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace whale::rt {

/// The bytes of a file, or of every regular file under a folder (in sorted
/// path order, so every machine reads the same stream), as tokens 0..255.
/// Sample i is the window starting at i * seq: `seq` input tokens and the
/// same window shifted by one as targets.
class TextDataset {
public:
  /// Fails with the path and the reason: missing, unreadable, or shorter
  /// than one window of seq + 1 bytes.
  static Status open(const std::string &path, int64_t seq, TextDataset &out);

  int64_t numSamples() const { return samples; }
  int64_t seqLength() const { return seq; }
  int64_t numBytes() const { return static_cast<int64_t>(bytes.size()); }
  const std::vector<std::string> &files() const { return paths; }

  /// Writes sample `index`'s inputs and targets (seq tokens each).
  template <class I> void sample(int64_t index, I *inputs, I *targets) const {
    const unsigned char *w = bytes.data() + index * seq;
    for (int64_t t = 0; t < seq; ++t) {
      inputs[t] = static_cast<I>(w[t]);
      targets[t] = static_cast<I>(w[t + 1]);
    }
  }

  /// The entropy of the byte distribution (bits per byte): the loss of the
  /// best model that ignores context, which a trained model should beat.
  double unigramEntropyBits() const;

private:
  std::vector<unsigned char> bytes;
  std::vector<std::string> paths;
  int64_t seq = 0, samples = 0;
};

} // namespace whale::rt

#endif
