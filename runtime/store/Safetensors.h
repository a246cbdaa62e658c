//===- Safetensors.h - checkpoints in the safetensors format -----*- C++
//-*-===//
//
// The format: an 8-byte little-endian header length N, N bytes of JSON
// ({"name": {"dtype": "F32", "shape": [..], "data_offsets": [begin, end]},
// "__metadata__": {"key": "value"}}), then the tensors' bytes, offsets
// relative to the end of the header. Whale names tensors by parameter path
// (`gpt/block_0/attention_0/linear_0/w`) and keeps optimizer state and the
// step and data position beside them, so a run resumes exactly.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_STORE_SAFETENSORS_H
#define WHALE_RUNTIME_STORE_SAFETENSORS_H

#include "runtime/Status.h"

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace whale::rt {

struct StoredTensor {
  std::string name;
  std::string dtype; // safetensors spelling: "F32", "F64", "I32", "I64", ...
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;
};

struct Checkpoint {
  std::vector<StoredTensor> tensors; // in file order
  std::map<std::string, std::string> metadata;
  const StoredTensor *find(const std::string &name) const;
};

/// Bytes per element of a safetensors dtype; 0 when unknown.
int64_t safetensorsDtypeSize(const std::string &dtype);

/// Writes to `path` through a temporary file and a rename, so a crash never
/// leaves a half-written checkpoint where a good one was.
Status writeSafetensors(const std::string &path, const Checkpoint &ckpt);

/// Parses a whole file held in memory; every offset, size and name is
/// checked, and what is wrong is named (with `source` as the file name).
Status parseSafetensors(const uint8_t *data, size_t size,
                        const std::string &source, Checkpoint &out);
Status readSafetensors(const std::string &path, Checkpoint &out);

} // namespace whale::rt

#endif
