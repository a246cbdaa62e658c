//===- Shape.h - dtypes and symbolic shapes ----------------------*- C++
//-*-===//

#ifndef WHALE_LANG_SHAPE_H
#define WHALE_LANG_SHAPE_H

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace whale::lang {

enum class DType { F32, F16, BF16, I32, I64 };
const char *dtypeName(DType d);
std::optional<DType> parseDType(const std::string &name);
bool isFloat(DType d);

/// One extent: a known integer, or a symbol such as the batch `B` (or an
/// expression over symbols, `(B*4)`) whose value is known only at run time.
/// Two symbolic extents are equal only when they are spelled the same.
/// Compile-time integers share this type, so a known value may be negative.
struct Dim {
  int64_t value = 0;
  std::string sym; // non-empty exactly when the extent is symbolic
  static Dim known(int64_t v) { return Dim{v, {}}; }
  static Dim symbol(std::string s) { return Dim{0, std::move(s)}; }
  bool isKnown() const { return sym.empty(); }
  bool operator==(const Dim &o) const {
    return isKnown() ? o.isKnown() && value == o.value
                     : !o.isKnown() && sym == o.sym;
  }
  bool operator!=(const Dim &o) const { return !(*this == o); }
  std::string str() const { return isKnown() ? std::to_string(value) : sym; }
};

struct TensorType {
  DType dtype = DType::F32;
  std::vector<Dim> dims;
  size_t rank() const { return dims.size(); }
  bool isKnown() const;
  /// Product of the extents when all are known.
  std::optional<int64_t> numElements() const;
  std::string str() const; // f32[B, 1024]
  bool operator==(const TensorType &o) const {
    return dtype == o.dtype && dims == o.dims;
  }
};

/// NumPy broadcasting; nullopt when an aligned pair differs and neither is 1.
std::optional<std::vector<Dim>> broadcastDims(const std::vector<Dim> &a,
                                              const std::vector<Dim> &b);

} // namespace whale::lang

#endif
