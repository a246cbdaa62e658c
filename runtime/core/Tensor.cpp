//===- Tensor.cpp - buffers with a shape and a dtype ----------------------===//

#include "runtime/core/Tensor.h"

#include "runtime/core/Device.h"
#include "support/Limits.h"

namespace whale::rt {

int64_t dtypeSize(DType d) {
  switch (d) {
  case DType::F32:
    return 4;
  case DType::F64:
    return 8;
  case DType::I32:
    return 4;
  case DType::I64:
    return 8;
  case DType::BF16:
    return 2;
  }
  return 4;
}

const char *dtypeName(DType d) {
  switch (d) {
  case DType::F32:
    return "f32";
  case DType::F64:
    return "f64";
  case DType::I32:
    return "i32";
  case DType::I64:
    return "i64";
  case DType::BF16:
    return "bf16";
  }
  return "f32";
}

int64_t numElements(const Shape &shape) {
  // Saturates rather than overflows: Tensor::create refuses such a shape,
  // so no tensor that exists has a count that does not fit.
  int64_t n = 1;
  for (int64_t d : shape)
    if (__builtin_mul_overflow(n, d, &n))
      return INT64_MAX;
  return n;
}

std::string shapeString(const Shape &shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i)
    s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

Tensor &Tensor::operator=(Tensor &&o) noexcept {
  if (this != &o) {
    reset();
    allocator_ = o.allocator_;
    dtype_ = o.dtype_;
    shape_ = std::move(o.shape_);
    data_ = o.data_;
    bytes_ = o.bytes_;
    o.allocator_ = nullptr;
    o.data_ = nullptr;
    o.bytes_ = 0;
  }
  return *this;
}

Status Tensor::reshape(Shape shape) {
  if (numElements(shape) != numel())
    return Status::invalid("reshape: " + shapeString(shape_) + " has " +
                           std::to_string(numel()) + " elements, " +
                           shapeString(shape) + " would have " +
                           std::to_string(numElements(shape)));
  shape_ = std::move(shape);
  return Status::ok();
}

void Tensor::reset() {
  if (allocator_ && data_)
    allocator_->release(data_, bytes_);
  allocator_ = nullptr;
  data_ = nullptr;
  bytes_ = 0;
}

/// The bytes of a tensor of `shape`, or an error for a negative extent or
/// more elements than a tensor may hold.
static Status checkedBytes(DType dtype, const Shape &shape, int64_t &bytes) {
  for (int64_t d : shape)
    if (d < 0)
      return Status::invalid("negative extent in shape " + shapeString(shape));
  int64_t elements = numElements(shape);
  if (elements > kMaxTensorElements)
    return Status::invalid("shape " + shapeString(shape) + " has more than " +
                           "2^40 elements, the most a tensor may hold");
  bytes = elements * dtypeSize(dtype);
  return Status::ok();
}

Status Tensor::borrow(DType dtype, Shape shape, void *data, Tensor &out) {
  int64_t bytes = 0;
  if (Status s = checkedBytes(dtype, shape, bytes); !s)
    return s;
  if (!data && bytes > 0)
    return Status::invalid("no memory to borrow for shape " +
                           shapeString(shape));
  out.reset();
  out.dtype_ = dtype;
  out.shape_ = std::move(shape);
  out.data_ = data;
  out.bytes_ = bytes;
  return Status::ok();
}

Status Tensor::create(Device &device, DType dtype, Shape shape, Tensor &out) {
  int64_t bytes = 0;
  if (Status s = checkedBytes(dtype, shape, bytes); !s)
    return s;
  void *data = nullptr;
  if (Status s = device.allocator().allocate(bytes, &data); !s)
    return s;
  out.reset();
  out.allocator_ = &device.allocator();
  out.dtype_ = dtype;
  out.shape_ = std::move(shape);
  out.data_ = data;
  out.bytes_ = bytes;
  return Status::ok();
}

} // namespace whale::rt
