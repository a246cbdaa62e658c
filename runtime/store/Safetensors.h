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

#include "runtime/core/Status.h"

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

/// Checksums in the metadata, where other readers ignore them: the CRC-32
/// of each tensor's bytes under kCrcPrefix + its name, and of the rest of
/// the metadata (its "key=value\n" lines in key order) under kMetadataCrc.
inline constexpr const char *kCrcPrefix = "whale.crc32.";
inline constexpr const char *kMetadataCrc = "whale.crc32.__metadata__";

/// Writes to `path` through a temporary file (synced to disk) and a
/// rename, so a crash or a full disk never leaves a half-written file where
/// a good one was; the temporary is removed when writing fails. Adds the
/// checksums above.
Status writeSafetensors(const std::string &path, const Checkpoint &ckpt);

/// Parses a whole file held in memory; every offset, size and name is
/// checked, and what is wrong is named (with `source` as the file name):
/// the header is one JSON object followed by spaces alone, the tensors
/// cover the data buffer exactly, in some order, with neither holes nor
/// overlaps, and each one's bytes are its shape times its dtype's size.
/// A file with kMetadataCrc (every file Whale writes) must match it and
/// carry a matching checksum for every tensor; a file from another writer
/// has none, and loads on the layout checks alone.
Status parseSafetensors(const uint8_t *data, size_t size,
                        const std::string &source, Checkpoint &out);
Status readSafetensors(const std::string &path, Checkpoint &out);
/// Every F16, BF16 and F64 tensor of `ckpt` as F32, in place: bf16 and
/// fp16 widened exactly, f64 rounded to nearest (as users bring weights in
/// bf16 to models in f32). Other dtypes are left as they are.
void widenFloatTensors(Checkpoint &ckpt);

/// The header alone (names, dtypes, shapes, metadata; no data, nothing
/// checked against the data): where a reader needs to know what a file
/// holds before it decides to read it.
Status readSafetensorsHeader(const std::string &path, Checkpoint &out);

} // namespace whale::rt

#endif
