//===- NpyArray.cpp - numpy .npy arrays, memory-mapped --------------------===//

#include "runtime/data/NpyArray.h"
#include "support/Limits.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace whale::rt {
namespace {

/// The value of `key` in the header dict, as written (up to the next ','
/// at depth 0, or the closing '}').
bool field(const std::string &header, const std::string &key,
           std::string &value) {
  size_t at = header.find("'" + key + "'");
  if (at == std::string::npos)
    return false;
  at = header.find(':', at);
  if (at == std::string::npos)
    return false;
  ++at;
  int depth = 0;
  size_t end = at;
  for (; end < header.size(); ++end) {
    char c = header[end];
    if (c == '(')
      ++depth;
    else if (c == ')')
      --depth;
    else if ((c == ',' && depth == 0) || c == '}')
      break;
  }
  value = header.substr(at, end - at);
  size_t b = value.find_first_not_of(" \t"), e = value.find_last_not_of(" \t");
  value = b == std::string::npos ? "" : value.substr(b, e + 1 - b);
  return true;
}

} // namespace

Status NpyArray::view(const unsigned char *bytes, size_t size,
                      const std::string &name, NpyArray &out) {
  const std::string what = "the array '" + name + "'";
  static const unsigned char kMagic[] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
  if (size < 10 || std::memcmp(bytes, kMagic, 6) != 0)
    return Status::invalid(what + " is not a .npy file (no \\x93NUMPY magic)");
  const int major = bytes[6];
  size_t headerLen = 0, start = 0;
  if (major == 1) {
    headerLen = bytes[8] | (size_t(bytes[9]) << 8);
    start = 10;
  } else if (major == 2 || major == 3) {
    if (size < 12)
      return Status::invalid(what + " ends inside its header");
    headerLen = bytes[8] | (size_t(bytes[9]) << 8) | (size_t(bytes[10]) << 16) |
                (size_t(bytes[11]) << 24);
    start = 12;
  } else {
    return Status::invalid(what + " has .npy version " + std::to_string(major) +
                           "; versions 1 to 3 read");
  }
  if (headerLen > size - start)
    return Status::invalid(what + " ends inside its header");
  const std::string header(reinterpret_cast<const char *>(bytes + start),
                           headerLen);
  // A key twice is a dict numpy reads by its last value and this reader
  // would by its first: refused, so that both never disagree.
  for (const char *key : {"descr", "fortran_order", "shape"}) {
    const std::string quoted = std::string("'") + key + "'";
    const size_t first = header.find(quoted);
    if (first != std::string::npos &&
        header.find(quoted, first + 1) != std::string::npos)
      return Status::invalid(what + ": its header names '" + key +
                             "' twice");
  }
  std::string descr, order, shape;
  if (!field(header, "descr", descr) ||
      !field(header, "fortran_order", order) || !field(header, "shape", shape))
    return Status::invalid(what + ": its header lacks descr, fortran_order "
                                  "or shape");
  if (order != "False")
    return Status::invalid(what + " is in Fortran order; save it in C order");
  NpyArray a;
  if (descr == "'<f4'" || descr == "'|f4'")
    a.type = "f4", a.width = 4;
  else if (descr == "'<f8'")
    a.type = "f8", a.width = 8;
  else if (descr == "'<i4'")
    a.type = "i4", a.width = 4;
  else if (descr == "'<i8'")
    a.type = "i8", a.width = 8;
  else if (descr == "'|u1'" || descr == "'<u1'")
    a.type = "u1", a.width = 1; // pixels
  else
    return Status::invalid(what + " holds " + descr +
                           "; read are little-endian f4, f8, i4, i8 and u1");
  // "(N, F)", "(N,)", "()".
  if (shape.size() < 2 || shape.front() != '(' || shape.back() != ')')
    return Status::invalid(what + ": shape " + shape + " is not a tuple");
  int64_t count = 1;
  std::string inner = shape.substr(1, shape.size() - 2);
  size_t at = 0;
  while (at < inner.size()) {
    size_t comma = inner.find(',', at);
    std::string part = inner.substr(
        at, comma == std::string::npos ? std::string::npos : comma - at);
    size_t b = part.find_first_not_of(" "), e = part.find_last_not_of(" ");
    part = b == std::string::npos ? "" : part.substr(b, e + 1 - b);
    if (!part.empty()) {
      if (part.size() > 15 ||
          part.find_first_not_of("0123456789") != std::string::npos)
        return Status::invalid(what + ": shape " + shape +
                               " has an extent that is not a number");
      int64_t d = std::stoll(part);
      if (!productWithin(count, d, kMaxTensorElements, count))
        return Status::invalid(what + ": shape " + shape +
                               " has more than 2^40 elements");
      a.dims.push_back(d);
    }
    if (comma == std::string::npos)
      break;
    at = comma + 1;
  }
  const size_t dataStart = start + headerLen;
  const size_t need = static_cast<size_t>(count) * a.width;
  if (size - dataStart != need)
    return Status::invalid(what + " has " + std::to_string(size - dataStart) +
                           " bytes of data; shape " + shape + " of " + a.type +
                           " needs " + std::to_string(need));
  a.data = bytes + dataStart;
  out = std::move(a);
  return Status::ok();
}

Status NpyArray::open(const std::string &path, NpyArray &out) {
  MappedFile file;
  if (Status s = MappedFile::open(path, "the array '" + path + "'", file); !s)
    return s;
  NpyArray a;
  if (Status s = view(file.data(), file.size(), path, a); !s)
    return s;
  a.file = std::move(file); // the view's bytes, owned from here
  out = std::move(a);
  return Status::ok();
}

float NpyArray::floatAt(int64_t i) const {
  const unsigned char *p = data + i * width;
  if (type == "f4") {
    float v;
    std::memcpy(&v, p, 4);
    return v;
  }
  if (type == "f8") {
    double v;
    std::memcpy(&v, p, 8);
    return static_cast<float>(v);
  }
  return static_cast<float>(intAt(i));
}

int64_t NpyArray::intAt(int64_t i) const {
  const unsigned char *p = data + i * width;
  if (type == "i4") {
    int32_t v;
    std::memcpy(&v, p, 4);
    return v;
  }
  if (type == "i8") {
    int64_t v;
    std::memcpy(&v, p, 8);
    return v;
  }
  if (type == "u1")
    return *p;
  // A float array read as integers: saturated, NaN as 0 (a float outside
  // int64 does not convert).
  double v = floatAt(i);
  if (std::isnan(v))
    return 0;
  if (v >= 9.2e18)
    return INT64_MAX;
  if (v <= -9.2e18)
    return INT64_MIN;
  return static_cast<int64_t>(v);
}

} // namespace whale::rt
