//===- Tensor.h - buffers with a shape and a dtype ---------------*- C++
//-*-===//

#ifndef WHALE_RUNTIME_CORE_TENSOR_H
#define WHALE_RUNTIME_CORE_TENSOR_H

#include "runtime/core/Allocator.h"
#include "runtime/core/Status.h"

#include <cstdint>
#include <string>
#include <vector>

namespace whale::rt {

class Device;

using Shape = std::vector<int64_t>;

/// BF16 is storage only (amp's activations): it has no C++ element type
/// here, so kernels see its bits as uint16_t and compute in fp32
/// (runtime/ops/Bf16.h converts).
enum class DType { F32, F64, I32, I64, BF16 };
int64_t dtypeSize(DType d);
const char *dtypeName(DType d);
template <class T> constexpr DType dtypeOf();
template <> constexpr DType dtypeOf<float>() { return DType::F32; }
template <> constexpr DType dtypeOf<double>() { return DType::F64; }
template <> constexpr DType dtypeOf<int32_t>() { return DType::I32; }
template <> constexpr DType dtypeOf<int64_t>() { return DType::I64; }

int64_t numElements(const Shape &shape);
std::string shapeString(const Shape &shape); // [2, 3]

/// A non-owning, contiguous, row-major view: what kernels take.
template <class T> struct View {
  T *data = nullptr;
  Shape shape;
  int64_t numel() const { return numElements(shape); }
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
};

/// A tensor that owns its buffer on a device. Move-only; the memory returns
/// to the device's allocator when it goes.
class Tensor {
public:
  Tensor() = default;
  ~Tensor() { reset(); }
  Tensor(Tensor &&o) noexcept { *this = std::move(o); }
  Tensor &operator=(Tensor &&o) noexcept;
  Tensor(const Tensor &) = delete;
  Tensor &operator=(const Tensor &) = delete;

  /// Allocates (uninitialized) or fails with the device's OutOfMemory status.
  static Status create(Device &device, DType dtype, Shape shape, Tensor &out);
  /// A tensor over memory the caller owns and keeps alive while the tensor
  /// lives (a host's batch, read in place); nothing is freed when it goes.
  static Status borrow(DType dtype, Shape shape, void *data, Tensor &out);

  DType dtype() const { return dtype_; }
  const Shape &shape() const { return shape_; }
  int64_t numel() const { return numElements(shape_); }
  int64_t bytes() const { return bytes_; }
  void *raw() { return data_; }
  /// The same elements seen in `shape`, which must have as many.
  Status reshape(Shape shape);

  template <class T> View<T> view() {
    return View<T>{static_cast<T *>(data_), shape_};
  }
  template <class T> View<const T> view() const { return cview<T>(); }
  /// A read-only view, also of a mutable tensor (kernel inputs).
  template <class T> View<const T> cview() const {
    return View<const T>{static_cast<const T *>(data_), shape_};
  }

private:
  void reset();
  Allocator *allocator_ = nullptr;
  DType dtype_ = DType::F32;
  Shape shape_;
  void *data_ = nullptr;
  int64_t bytes_ = 0;
};

} // namespace whale::rt

#endif
