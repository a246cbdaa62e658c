//===- Safetensors.cpp - checkpoints in the safetensors format ------------===//

#include "runtime/store/Safetensors.h"

#include "runtime/ops/Bf16.h"
#include "runtime/store/Crc32.h"
#include "support/InputFile.h"
#include "support/JsonString.h"
#include "support/JsonValue.h"
#include "support/Limits.h"
#include "support/OutputFile.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <set>

namespace whale::rt {

const StoredTensor *Checkpoint::find(const std::string &name) const {
  for (const StoredTensor &t : tensors)
    if (t.name == name)
      return &t;
  return nullptr;
}

int64_t safetensorsDtypeSize(const std::string &d) {
  if (d == "F64" || d == "I64" || d == "U64")
    return 8;
  if (d == "F32" || d == "I32" || d == "U32")
    return 4;
  if (d == "F16" || d == "BF16" || d == "I16" || d == "U16")
    return 2;
  if (d == "I8" || d == "U8" || d == "BOOL")
    return 1;
  return 0;
}

//===----------------------------------------------------------------------===//
// Writing
//===----------------------------------------------------------------------===//

namespace {

/// The text the metadata checksum covers: every entry but the checksum
/// itself, as "key=value\n" in key order.
std::string metadataText(const std::map<std::string, std::string> &metadata) {
  std::string text;
  for (const auto &[k, v] : metadata)
    if (k != kMetadataCrc)
      text += k + "=" + v + "\n";
  return text;
}

uint32_t crcOf(const std::string &s) {
  return crc32(reinterpret_cast<const uint8_t *>(s.data()), s.size());
}

} // namespace

Status writeSafetensors(const std::string &path, const Checkpoint &ckpt) {
  std::map<std::string, std::string> metadata = ckpt.metadata;
  for (const StoredTensor &t : ckpt.tensors)
    metadata[kCrcPrefix + t.name] =
        std::to_string(crc32(t.data.data(), t.data.size()));
  metadata[kMetadataCrc] = std::to_string(crcOf(metadataText(metadata)));

  std::string header = "{\"__metadata__\":{";
  bool first = true;
  for (const auto &[k, v] : metadata) {
    header += (first ? "" : ",") + jsonQuote(k) + ":" + jsonQuote(v);
    first = false;
  }
  header += "}";
  uint64_t offset = 0;
  for (const StoredTensor &t : ckpt.tensors) {
    int64_t elem = safetensorsDtypeSize(t.dtype);
    int64_t n = 1;
    for (int64_t d : t.shape)
      if (d < 0 || __builtin_mul_overflow(n, d, &n))
        n = -1;
    if (elem == 0 || n < 0 ||
        static_cast<uint64_t>(n) * static_cast<uint64_t>(elem) != t.data.size())
      return Status::invalid("checkpoint tensor '" + t.name + "' has " +
                             std::to_string(t.data.size()) +
                             " bytes, which do not match dtype " + t.dtype +
                             " and its shape");
    std::string shape;
    for (size_t i = 0; i < t.shape.size(); ++i)
      shape += (i ? "," : "") + std::to_string(t.shape[i]);
    header += "," + jsonQuote(t.name) + ":{\"dtype\":\"" + t.dtype +
              "\",\"shape\":[" + shape + "],\"data_offsets\":[" +
              std::to_string(offset) + "," +
              std::to_string(offset + t.data.size()) + "]}";
    offset += t.data.size();
  }
  header += "}";
  // Pad with spaces so the data starts 8-byte aligned, as readers expect.
  while ((header.size() + 8) % 8)
    header += ' ';

  unsigned char len[8];
  for (int i = 0; i < 8; ++i)
    len[i] = static_cast<unsigned char>(uint64_t(header.size()) >> (8 * i));
  std::vector<std::string_view> parts = {
      std::string_view(reinterpret_cast<const char *>(len), 8), header};
  for (const StoredTensor &t : ckpt.tensors)
    parts.push_back(std::string_view(
        reinterpret_cast<const char *>(t.data.data()), t.data.size()));
  if (std::string err = writeFileWhole(path, "checkpoint", parts);
      !err.empty())
    return Status::invalid(err);
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

namespace {

/// What a checkpoint's header says, read from its JSON (support/JsonValue.h,
/// strict and bounded): every tensor's name, dtype, shape and byte range,
/// and the metadata.
class HeaderReader {
public:
  explicit HeaderReader(const std::string &source) : source(source) {}

  Status read(const std::string &text, Checkpoint &out,
              std::vector<std::pair<uint64_t, uint64_t>> &ranges) const;

private:
  Status fail(const std::string &what) const {
    return Status::invalid("checkpoint '" + source + "': " + what);
  }
  /// A non-negative integer that a double holds exactly (below 2^53: no
  /// checkpoint's offsets come near).
  static bool wholeNumber(const JsonValue &v, uint64_t &out) {
    if (v.kind != JsonValue::Kind::Number || !(v.number >= 0) ||
        v.number > 9007199254740992.0 || v.number != std::floor(v.number))
      return false;
    out = static_cast<uint64_t>(v.number);
    return true;
  }
  Status integers(const JsonValue &v, const std::string &what, size_t most,
                  std::vector<uint64_t> &out) const;
  Status tensor(const std::string &name, const JsonValue &v, StoredTensor &t,
                std::pair<uint64_t, uint64_t> &range) const;

  const std::string &source;
};

Status HeaderReader::integers(const JsonValue &v, const std::string &what,
                              size_t most, std::vector<uint64_t> &out) const {
  if (v.kind != JsonValue::Kind::Array)
    return fail(what + " is not an array of integers");
  if (v.items.size() > most)
    return fail(what + " has more than " + std::to_string(most) + " entries");
  out.clear();
  for (const JsonValue &item : v.items) {
    uint64_t n;
    if (!wholeNumber(item, n))
      return fail(what + " holds something other than a non-negative "
                         "integer below 2^53");
    out.push_back(n);
  }
  return Status::ok();
}

Status HeaderReader::tensor(const std::string &name, const JsonValue &v,
                            StoredTensor &t,
                            std::pair<uint64_t, uint64_t> &range) const {
  if (v.kind != JsonValue::Kind::Object)
    return fail("expected an object for tensor '" + name + "'");
  t.name = name;
  const JsonValue *dtype = v.find("dtype"), *shape = v.find("shape"),
                  *offsets = v.find("data_offsets");
  if (!dtype || !shape || !offsets)
    return fail("tensor '" + name +
                "' needs dtype, shape and two data_offsets");
  if (dtype->kind != JsonValue::Kind::String)
    return fail("tensor '" + name + "' has a dtype that is not a string");
  t.dtype = dtype->string;
  std::vector<uint64_t> extents, ends;
  if (Status s =
          integers(*shape, "the shape of tensor '" + name + "'", 64, extents);
      !s)
    return s;
  for (uint64_t d : extents) {
    if (d > (uint64_t(1) << 48))
      return fail("an extent too large in tensor '" + name + "'");
    t.shape.push_back(static_cast<int64_t>(d));
  }
  if (Status s = integers(*offsets, "the data_offsets of tensor '" + name + "'",
                          2, ends);
      !s)
    return s;
  if (ends.size() != 2)
    return fail("tensor '" + name +
                "' needs dtype, shape and two data_offsets");
  if (safetensorsDtypeSize(t.dtype) == 0)
    return fail("tensor '" + name + "' has the unknown dtype '" + t.dtype +
                "'");
  range = {ends[0], ends[1]};
  return Status::ok();
}

Status
HeaderReader::read(const std::string &text, Checkpoint &out,
                   std::vector<std::pair<uint64_t, uint64_t>> &ranges) const {
  JsonValue header;
  std::string error;
  if (!parseJson(text, header, error))
    return fail("its header is not JSON: " + error);
  if (header.kind != JsonValue::Kind::Object)
    return fail("expected the header to be a JSON object");
  std::set<std::string> seen;
  for (const auto &[name, v] : header.members) {
    if (!seen.insert(name).second)
      return fail(name == "__metadata__"
                      ? "__metadata__ appears twice"
                      : "tensor '" + name + "' appears twice");
    if (name == "__metadata__") {
      if (v.kind != JsonValue::Kind::Object)
        return fail("expected __metadata__ to be an object");
      for (const auto &[key, value] : v.members) {
        if (value.kind != JsonValue::Kind::String)
          return fail("metadata '" + key + "' is not a string");
        out.metadata[key] = value.string;
      }
      continue;
    }
    StoredTensor t;
    std::pair<uint64_t, uint64_t> range;
    if (Status s = tensor(name, v, t, range); !s)
      return s;
    ranges.push_back(range);
    out.tensors.push_back(std::move(t));
  }
  return Status::ok();
}

} // namespace

/// The checksums writeSafetensors adds, where the file has them.
static Status verifyChecksums(const Checkpoint &ckpt,
                              const std::string &source) {
  auto expected = [&](const std::string &key, uint32_t &crc) {
    auto it = ckpt.metadata.find(key);
    if (it == ckpt.metadata.end())
      return false;
    const std::string &v = it->second;
    if (v.empty() || v.size() > 10 ||
        !std::all_of(v.begin(), v.end(), [](char c) {
          return std::isdigit(static_cast<unsigned char>(c));
        }))
      return false;
    uint64_t n = std::stoull(v);
    crc = static_cast<uint32_t>(n);
    return n <= UINT32_MAX;
  };
  uint32_t want = 0;
  bool sealed = ckpt.metadata.count(kMetadataCrc);
  if (sealed && (!expected(kMetadataCrc, want) ||
                 want != crcOf(metadataText(ckpt.metadata))))
    return Status::invalid("checkpoint '" + source +
                           "': its metadata do not match their checksum: "
                           "the file is damaged");
  for (const StoredTensor &t : ckpt.tensors) {
    std::string key = kCrcPrefix + t.name;
    if (!ckpt.metadata.count(key) && !sealed)
      continue;
    if (!expected(key, want))
      return Status::invalid("checkpoint '" + source + "': tensor '" + t.name +
                             "' has no valid checksum");
    if (want != crc32(t.data.data(), t.data.size()))
      return Status::invalid("checkpoint '" + source + "': tensor '" + t.name +
                             "' does not match its checksum: the file is "
                             "damaged");
  }
  return Status::ok();
}

Status parseSafetensors(const uint8_t *data, size_t size,
                        const std::string &source, Checkpoint &out) {
  out = Checkpoint();
  if (size < 8)
    return Status::invalid("checkpoint '" + source + "' is " +
                           std::to_string(size) +
                           " bytes, too short for a safetensors header");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= static_cast<uint64_t>(data[i]) << (8 * i);
  if (n > size - 8 || n > (uint64_t(100) << 20))
    return Status::invalid("checkpoint '" + source + "' declares a header of " +
                           std::to_string(n) + " bytes in a file of " +
                           std::to_string(size));
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  // Writers pad the header with spaces, which JSON reads as white space.
  if (Status s = HeaderReader(source).read(
          std::string(reinterpret_cast<const char *>(data + 8), n), out,
          ranges);
      !s)
    return s;
  uint64_t buffer = size - 8 - n;
  const uint8_t *base = data + 8 + n;
  std::vector<std::pair<uint64_t, size_t>> order;
  for (size_t i = 0; i < out.tensors.size(); ++i) {
    StoredTensor &t = out.tensors[i];
    auto [b, e] = ranges[i];
    // At most kMaxTensorElements (2^40), so the bytes they need (times at
    // most 8) cannot wrap: a [2^48, 2^14] f32 tensor's 2^62 elements times 4
    // wrapped to 0 and passed as an empty tensor's bytes.
    uint64_t elems = 1;
    bool tooMany = false;
    for (int64_t d : t.shape) {
      if (d != 0 && elems > UINT64_MAX / static_cast<uint64_t>(d))
        tooMany = true;
      else
        elems *= static_cast<uint64_t>(d);
    }
    if (tooMany || elems > static_cast<uint64_t>(kMaxTensorElements))
      return Status::invalid("checkpoint '" + source + "': tensor '" + t.name +
                             "' has more than 2^40 elements");
    uint64_t want =
        elems * static_cast<uint64_t>(safetensorsDtypeSize(t.dtype));
    if (b > e || e > buffer || e - b != want)
      return Status::invalid(
          "checkpoint '" + source + "': tensor '" + t.name +
          "' claims bytes [" + std::to_string(b) + ", " + std::to_string(e) +
          ") of a " + std::to_string(buffer) +
          "-byte buffer but its dtype and shape need " + std::to_string(want));
    t.data.assign(base + b, base + e);
    order.push_back({b, i});
  }
  // The tensors tile the buffer: no overlap (the format forbids it), no
  // hole and nothing after the last (a truncated or spliced file shows so).
  std::sort(order.begin(), order.end());
  uint64_t covered = 0;
  for (size_t i = 0; i < order.size(); ++i) {
    const std::string &name = out.tensors[order[i].second].name;
    if (order[i].first < covered)
      return Status::invalid("checkpoint '" + source + "': tensors '" +
                             out.tensors[order[i - 1].second].name + "' and '" +
                             name + "' overlap");
    if (order[i].first > covered)
      return Status::invalid("checkpoint '" + source +
                             "': " + std::to_string(order[i].first - covered) +
                             " bytes of the data buffer before tensor '" +
                             name + "' belong to no tensor");
    covered = ranges[order[i].second].second;
  }
  if (covered != buffer)
    return Status::invalid("checkpoint '" + source +
                           "': " + std::to_string(buffer - covered) +
                           " bytes after the last tensor belong to none");
  return verifyChecksums(out, source);
}

Status readSafetensorsHeader(const std::string &path, Checkpoint &out) {
  out = Checkpoint();
  std::ifstream in(path, std::ios::binary);
  uint8_t prefix[8] = {};
  if (!in || !in.read(reinterpret_cast<char *>(prefix), 8))
    return Status::invalid("checkpoint '" + path +
                           "' cannot be read, or is too short for a "
                           "safetensors header");
  uint64_t n = 0;
  for (int i = 0; i < 8; ++i)
    n |= static_cast<uint64_t>(prefix[i]) << (8 * i);
  if (n > (uint64_t(100) << 20))
    return Status::invalid("checkpoint '" + path + "' declares a header of " +
                           std::to_string(n) + " bytes");
  std::string header(static_cast<size_t>(n), '\0');
  if (!in.read(header.data(), static_cast<std::streamsize>(n)))
    return Status::invalid("checkpoint '" + path + "' ends inside its header");
  std::vector<std::pair<uint64_t, uint64_t>> ranges;
  return HeaderReader(path).read(header, out, ranges);
}

Status readSafetensors(const std::string &path, Checkpoint &out) {
  std::vector<uint8_t> bytes;
  if (std::string why =
          readRegularFile(path, "checkpoint", kMaxCheckpoint, bytes);
      !why.empty())
    return Status::invalid(why);
  return parseSafetensors(bytes.data(), bytes.size(), path, out);
}

namespace {

/// The fp32 value of IEEE half bits.
float halfValue(uint16_t h) {
  const uint32_t sign = static_cast<uint32_t>(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu, man = h & 0x3ffu, bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (man << 13); // infinity or NaN
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (man << 13);
  } else if (man == 0) {
    bits = sign; // zero
  } else {
    // A subnormal half is a normal float: shift its mantissa up.
    int e = -1;
    do {
      man <<= 1;
      ++e;
    } while (!(man & 0x400u));
    bits = sign | static_cast<uint32_t>(112 - e) << 23 | ((man & 0x3ffu) << 13);
  }
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

} // namespace

void widenFloatTensors(Checkpoint &ckpt) {
  for (StoredTensor &t : ckpt.tensors) {
    const std::string &d = t.dtype;
    if (d != "F16" && d != "BF16" && d != "F64")
      continue;
    const size_t size = static_cast<size_t>(safetensorsDtypeSize(d));
    const size_t n = t.data.size() / size;
    std::vector<uint8_t> wide(n * 4);
    for (size_t i = 0; i < n; ++i) {
      float f;
      if (d == "F64") {
        double v;
        std::memcpy(&v, t.data.data() + 8 * i, 8);
        f = static_cast<float>(v);
      } else {
        uint16_t bits;
        std::memcpy(&bits, t.data.data() + 2 * i, 2);
        f = d == "BF16" ? bf16Value(bits) : halfValue(bits);
      }
      std::memcpy(wide.data() + 4 * i, &f, 4);
    }
    t.data = std::move(wide);
    t.dtype = "F32";
  }
}

} // namespace whale::rt
