//===- NpyArray.h - numpy .npy arrays, memory-mapped --------------*- C++
//-*-===//
//
// The format numpy.save writes: the magic "\x93NUMPY", a version, a header
// dict ({'descr': '<f4', 'fortran_order': False, 'shape': (N, F)}) padded
// to 64 bytes, then the data in C order. Read without Python: f32, f64,
// i32, i64 and u8 (pixels), little endian, C order; anything else is
// refused by name.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_DATA_NPYARRAY_H
#define WHALE_RUNTIME_DATA_NPYARRAY_H

#include "runtime/core/Status.h"
#include "runtime/data/MappedFile.h"

#include <cstdint>
#include <string>
#include <vector>

namespace whale::rt {

class NpyArray {
public:
  /// Maps `path` and checks its header against its size.
  static Status open(const std::string &path, NpyArray &out);
  /// The same over `size` bytes the caller keeps alive (the fuzzer).
  static Status view(const unsigned char *data, size_t size,
                     const std::string &name, NpyArray &out);

  const std::vector<int64_t> &shape() const { return dims; }
  /// "f4", "f8", "i4", "i8" or "u1".
  const std::string &dtype() const { return type; }
  /// Element `i` (C order) as a float or an integer.
  float floatAt(int64_t i) const;
  int64_t intAt(int64_t i) const;

private:
  MappedFile file; ///< what open() mapped (nothing for a view)
  const unsigned char *data = nullptr;
  std::vector<int64_t> dims;
  std::string type;
  int width = 4;
};

} // namespace whale::rt

#endif
