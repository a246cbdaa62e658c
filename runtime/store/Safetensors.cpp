//===- Safetensors.cpp - checkpoints in the safetensors format ------------===//

#include "runtime/store/Safetensors.h"

#include "runtime/Json.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

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

Status writeSafetensors(const std::string &path, const Checkpoint &ckpt) {
  std::string header = "{";
  bool first = true;
  if (!ckpt.metadata.empty()) {
    header += "\"__metadata__\":{";
    for (const auto &[k, v] : ckpt.metadata) {
      header += (first ? "" : ",") + jsonQuote(k) + ":" + jsonQuote(v);
      first = false;
    }
    header += "}";
  }
  uint64_t offset = 0;
  for (const StoredTensor &t : ckpt.tensors) {
    int64_t elem = safetensorsDtypeSize(t.dtype);
    int64_t n = 1;
    for (int64_t d : t.shape)
      n *= d;
    if (elem == 0 || static_cast<uint64_t>(n * elem) != t.data.size())
      return Status::invalid("checkpoint tensor '" + t.name + "' has " +
                             std::to_string(t.data.size()) +
                             " bytes, which do not match dtype " + t.dtype +
                             " and its shape");
    std::string shape;
    for (size_t i = 0; i < t.shape.size(); ++i)
      shape += (i ? "," : "") + std::to_string(t.shape[i]);
    header += std::string(header.size() > 1 ? "," : "") + jsonQuote(t.name) +
              ":{\"dtype\":\"" + t.dtype + "\",\"shape\":[" + shape +
              "],\"data_offsets\":[" + std::to_string(offset) + "," +
              std::to_string(offset + t.data.size()) + "]}";
    offset += t.data.size();
  }
  header += "}";
  // Pad with spaces so the data starts 8-byte aligned, as readers expect.
  while ((header.size() + 8) % 8)
    header += ' ';

  std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f)
      return Status::invalid("cannot write checkpoint '" + tmp +
                             "': " + std::strerror(errno));
    uint64_t n = header.size();
    unsigned char len[8];
    for (int i = 0; i < 8; ++i)
      len[i] = static_cast<unsigned char>(n >> (8 * i));
    f.write(reinterpret_cast<const char *>(len), 8);
    f.write(header.data(), header.size());
    for (const StoredTensor &t : ckpt.tensors)
      f.write(reinterpret_cast<const char *>(t.data.data()), t.data.size());
    f.flush();
    if (!f)
      return Status::invalid("cannot write checkpoint '" + tmp +
                             "': " + std::strerror(errno));
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    return Status::invalid("cannot move checkpoint into place at '" + path +
                           "': " + std::strerror(errno));
  return Status::ok();
}

//===----------------------------------------------------------------------===//
// Reading
//===----------------------------------------------------------------------===//

namespace {

/// A strict reader for the header's JSON: objects, arrays, strings,
/// non-negative integers. Depth is bounded; every error says where.
class HeaderParser {
public:
  HeaderParser(const char *p, size_t n, const std::string &source)
      : p(p), end(p + n), begin(p), source(source) {}

  Status parse(Checkpoint &out,
               std::vector<std::pair<uint64_t, uint64_t>> &ranges);

private:
  Status fail(const std::string &what) {
    return Status::invalid("checkpoint '" + source + "': " + what +
                           " at byte " + std::to_string(8 + (p - begin)) +
                           " of the header");
  }
  void ws() {
    while (p < end && (*p == ' ' || *p == '\n' || *p == '\r' || *p == '\t'))
      ++p;
  }
  bool eat(char c) {
    ws();
    if (p < end && *p == c) {
      ++p;
      return true;
    }
    return false;
  }
  Status string(std::string &out);
  Status integer(uint64_t &out);
  Status intArray(std::vector<uint64_t> &out);
  Status skipValue(int depth);

  const char *p, *end, *begin;
  const std::string &source;
};

Status HeaderParser::string(std::string &out) {
  if (!eat('"'))
    return fail("expected a string");
  out.clear();
  while (p < end && *p != '"') {
    char c = *p++;
    if (c == '\\') {
      if (p >= end)
        break;
      char e = *p++;
      switch (e) {
      case '"':
      case '\\':
      case '/':
        out += e;
        break;
      case 'n':
        out += '\n';
        break;
      case 't':
        out += '\t';
        break;
      case 'r':
        out += '\r';
        break;
      case 'b':
        out += '\b';
        break;
      case 'f':
        out += '\f';
        break;
      case 'u': {
        if (end - p < 4)
          return fail("a short \\u escape");
        unsigned v = 0;
        for (int i = 0; i < 4; ++i) {
          char h = *p++;
          int digit = h >= '0' && h <= '9'   ? h - '0'
                      : h >= 'a' && h <= 'f' ? h - 'a' + 10
                      : h >= 'A' && h <= 'F' ? h - 'A' + 10
                                             : -1;
          if (digit < 0)
            return fail("a bad \\u escape");
          v = v * 16 + static_cast<unsigned>(digit);
        }
        // Encode the code point as UTF-8 (surrogates are kept as is).
        if (v < 0x80) {
          out += static_cast<char>(v);
        } else if (v < 0x800) {
          out += static_cast<char>(0xC0 | (v >> 6));
          out += static_cast<char>(0x80 | (v & 0x3F));
        } else {
          out += static_cast<char>(0xE0 | (v >> 12));
          out += static_cast<char>(0x80 | ((v >> 6) & 0x3F));
          out += static_cast<char>(0x80 | (v & 0x3F));
        }
        break;
      }
      default:
        return fail("an unknown escape");
      }
    } else {
      out += c;
    }
  }
  if (p >= end)
    return fail("an unterminated string");
  ++p;
  return Status::ok();
}

Status HeaderParser::integer(uint64_t &out) {
  ws();
  if (p >= end || *p < '0' || *p > '9')
    return fail("expected a non-negative integer");
  out = 0;
  while (p < end && *p >= '0' && *p <= '9') {
    if (out > (UINT64_MAX - 9) / 10)
      return fail("an integer that does not fit in 64 bits");
    out = out * 10 + static_cast<uint64_t>(*p++ - '0');
  }
  return Status::ok();
}

Status HeaderParser::intArray(std::vector<uint64_t> &out) {
  if (!eat('['))
    return fail("expected '['");
  out.clear();
  if (eat(']'))
    return Status::ok();
  do {
    uint64_t v;
    if (Status s = integer(v); !s)
      return s;
    if (out.size() > 64)
      return fail("a shape of more than 64 dimensions");
    out.push_back(v);
  } while (eat(','));
  if (!eat(']'))
    return fail("expected ']'");
  return Status::ok();
}

Status HeaderParser::skipValue(int depth) {
  if (depth > 32)
    return fail("nesting deeper than 32");
  ws();
  if (p >= end)
    return fail("a missing value");
  if (*p == '"') {
    std::string s;
    return string(s);
  }
  if (*p == '{' || *p == '[') {
    char close = *p == '{' ? '}' : ']';
    bool object = *p == '{';
    ++p;
    if (eat(close))
      return Status::ok();
    do {
      if (object) {
        std::string k;
        if (Status s = string(k); !s)
          return s;
        if (!eat(':'))
          return fail("expected ':'");
      }
      if (Status s = skipValue(depth + 1); !s)
        return s;
    } while (eat(','));
    if (!eat(close))
      return fail(std::string("expected '") + close + "'");
    return Status::ok();
  }
  // numbers, true, false, null
  const char *start = p;
  while (p < end && (std::isalnum(static_cast<unsigned char>(*p)) ||
                     *p == '-' || *p == '+' || *p == '.'))
    ++p;
  if (p == start)
    return fail("an unexpected character");
  return Status::ok();
}

Status HeaderParser::parse(Checkpoint &out,
                           std::vector<std::pair<uint64_t, uint64_t>> &ranges) {
  if (!eat('{'))
    return fail("expected the header to be a JSON object");
  if (eat('}'))
    return Status::ok();
  do {
    std::string name;
    if (Status s = string(name); !s)
      return s;
    if (!eat(':'))
      return fail("expected ':'");
    if (name == "__metadata__") {
      if (!eat('{'))
        return fail("expected __metadata__ to be an object");
      if (!eat('}')) {
        do {
          std::string k, v;
          if (Status s = string(k); !s)
            return s;
          if (!eat(':'))
            return fail("expected ':'");
          if (Status s = string(v); !s)
            return s;
          out.metadata[k] = v;
        } while (eat(','));
        if (!eat('}'))
          return fail("expected '}'");
      }
      continue;
    }
    if (out.find(name))
      return fail("tensor '" + name + "' appears twice");
    StoredTensor t;
    t.name = name;
    bool haveDtype = false, haveShape = false, haveOffsets = false;
    std::vector<uint64_t> offsets;
    if (!eat('{'))
      return fail("expected an object for tensor '" + name + "'");
    if (!eat('}')) {
      do {
        std::string key;
        if (Status s = string(key); !s)
          return s;
        if (!eat(':'))
          return fail("expected ':'");
        if (key == "dtype") {
          if (Status s = string(t.dtype); !s)
            return s;
          haveDtype = true;
        } else if (key == "shape") {
          std::vector<uint64_t> shape;
          if (Status s = intArray(shape); !s)
            return s;
          for (uint64_t d : shape) {
            if (d > (uint64_t(1) << 48))
              return fail("an extent too large in tensor '" + name + "'");
            t.shape.push_back(static_cast<int64_t>(d));
          }
          haveShape = true;
        } else if (key == "data_offsets") {
          if (Status s = intArray(offsets); !s)
            return s;
          haveOffsets = true;
        } else if (Status s = skipValue(0); !s) {
          return s;
        }
      } while (eat(','));
      if (!eat('}'))
        return fail("expected '}'");
    }
    if (!haveDtype || !haveShape || !haveOffsets || offsets.size() != 2)
      return fail("tensor '" + name +
                  "' needs dtype, shape and two data_offsets");
    if (safetensorsDtypeSize(t.dtype) == 0)
      return fail("tensor '" + name + "' has the unknown dtype '" + t.dtype +
                  "'");
    ranges.push_back({offsets[0], offsets[1]});
    out.tensors.push_back(std::move(t));
  } while (eat(','));
  if (!eat('}'))
    return fail("expected '}' to end the header");
  return Status::ok();
}

} // namespace

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
  HeaderParser parser(reinterpret_cast<const char *>(data + 8), n, source);
  if (Status s = parser.parse(out, ranges); !s)
    return s;
  uint64_t buffer = size - 8 - n;
  const uint8_t *base = data + 8 + n;
  std::vector<std::pair<uint64_t, size_t>> order;
  for (size_t i = 0; i < out.tensors.size(); ++i) {
    StoredTensor &t = out.tensors[i];
    auto [b, e] = ranges[i];
    uint64_t elems = 1;
    for (int64_t d : t.shape) {
      if (d != 0 && elems > UINT64_MAX / static_cast<uint64_t>(d))
        return Status::invalid("checkpoint '" + source + "': tensor '" +
                               t.name + "' has too many elements");
      elems *= static_cast<uint64_t>(d);
    }
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
  // Tensors may not overlap (the format forbids it; a writer bug shows so).
  std::sort(order.begin(), order.end());
  for (size_t i = 1; i < order.size(); ++i) {
    uint64_t prevEnd = ranges[order[i - 1].second].second;
    if (order[i].first < prevEnd)
      return Status::invalid("checkpoint '" + source + "': tensors '" +
                             out.tensors[order[i - 1].second].name + "' and '" +
                             out.tensors[order[i].second].name + "' overlap");
  }
  return Status::ok();
}

Status readSafetensors(const std::string &path, Checkpoint &out) {
  std::ifstream f(path, std::ios::binary);
  if (!f)
    return Status::invalid("cannot read checkpoint '" + path +
                           "': " + std::strerror(errno));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(f)),
                             std::istreambuf_iterator<char>());
  return parseSafetensors(bytes.data(), bytes.size(), path, out);
}

} // namespace whale::rt
