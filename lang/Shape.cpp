//===- Shape.cpp - dtypes and symbolic shapes -----------------------------===//

#include "lang/Shape.h"

namespace whale::lang {

const char *dtypeName(DType d) {
  switch (d) {
  case DType::F32:
    return "f32";
  case DType::F16:
    return "f16";
  case DType::BF16:
    return "bf16";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  }
  return "f32";
}

std::optional<DType> parseDType(const std::string &name) {
  if (name == "f32")
    return DType::F32;
  if (name == "f16")
    return DType::F16;
  if (name == "bf16")
    return DType::BF16;
  if (name == "i32")
    return DType::I32;
  if (name == "i64")
    return DType::I64;
  return std::nullopt;
}

bool isFloat(DType d) {
  return d == DType::F32 || d == DType::F16 || d == DType::BF16;
}

bool TensorType::isKnown() const {
  for (const Dim &d : dims)
    if (!d.isKnown())
      return false;
  return true;
}

std::optional<int64_t> TensorType::numElements() const {
  int64_t n = 1;
  for (const Dim &d : dims) {
    if (!d.isKnown())
      return std::nullopt;
    if (d.value != 0 && n > INT64_MAX / d.value)
      return std::nullopt;
    n *= d.value;
  }
  return n;
}

std::string TensorType::str() const {
  std::string s = std::string(dtypeName(dtype)) + "[";
  for (size_t i = 0; i < dims.size(); ++i) {
    if (i)
      s += ", ";
    s += dims[i].str();
  }
  return s + "]";
}

std::optional<std::vector<Dim>> broadcastDims(const std::vector<Dim> &a,
                                              const std::vector<Dim> &b) {
  size_t rank = std::max(a.size(), b.size());
  std::vector<Dim> out(rank);
  for (size_t i = 0; i < rank; ++i) {
    Dim x = i < a.size() ? a[a.size() - 1 - i] : Dim::known(1);
    Dim y = i < b.size() ? b[b.size() - 1 - i] : Dim::known(1);
    bool xOne = x.isKnown() && x.value == 1, yOne = y.isKnown() && y.value == 1;
    if (x != y && !xOne && !yOne)
      return std::nullopt;
    out[rank - 1 - i] = xOne ? y : x;
  }
  return out;
}

} // namespace whale::lang
