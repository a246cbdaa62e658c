//===- SafetensorsTool.cpp - our checkpoint code, driven from a script ----===//
//
//   safetensors-tool write FILE   writes a checkpoint of known tensors
//   safetensors-tool dump FILE    reads one and prints each tensor's name,
//                                 dtype, shape and values
//
// test/interop/check_safetensors.py runs both against Python's safetensors
// and numpy, so our files are read by a real client and theirs by us.
//
//===----------------------------------------------------------------------===//

#include "runtime/store/Safetensors.h"

#include <cstdio>
#include <cstring>
#include <string>

using namespace whale::rt;

static StoredTensor make(const std::string &name, const std::string &dtype,
                         std::vector<int64_t> shape) {
  StoredTensor t{name, dtype, shape, {}};
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  t.data.resize(n * safetensorsDtypeSize(dtype));
  for (int64_t i = 0; i < n; ++i) {
    if (dtype == "F32") {
      float v = 0.5f * static_cast<float>(i) - 1.0f;
      std::memcpy(t.data.data() + 4 * i, &v, 4);
    } else if (dtype == "F64") {
      double v = 0.25 * static_cast<double>(i);
      std::memcpy(t.data.data() + 8 * i, &v, 8);
    } else if (dtype == "I32") {
      int32_t v = static_cast<int32_t>(i * 3 - 7);
      std::memcpy(t.data.data() + 4 * i, &v, 4);
    } else {
      int64_t v = i + 1000000000000ll;
      std::memcpy(t.data.data() + 8 * i, &v, 8);
    }
  }
  return t;
}

int main(int argc, char **argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: safetensors-tool write|dump FILE\n");
    return 2;
  }
  std::string mode = argv[1], path = argv[2];
  if (mode == "write") {
    Checkpoint c;
    c.tensors.push_back(make("model/linear_0/w", "F32", {3, 4}));
    c.tensors.push_back(make("model/linear_0/b", "F64", {4}));
    c.tensors.push_back(make("data/ids", "I32", {2, 2, 2}));
    c.tensors.push_back(make("step", "I64", {}));
    c.metadata["writer"] = "whale";
    Status st = writeSafetensors(path, c);
    if (!st) {
      std::fprintf(stderr, "%s\n", st.message().c_str());
      return 1;
    }
    return 0;
  }
  Checkpoint c;
  Status st = readSafetensors(path, c);
  if (!st) {
    std::fprintf(stderr, "%s\n", st.message().c_str());
    return 1;
  }
  for (const StoredTensor &t : c.tensors) {
    std::printf("%s %s [", t.name.c_str(), t.dtype.c_str());
    for (size_t i = 0; i < t.shape.size(); ++i)
      std::printf("%s%lld", i ? "," : "", static_cast<long long>(t.shape[i]));
    std::printf("]");
    int64_t size = safetensorsDtypeSize(t.dtype);
    for (size_t i = 0; i < t.data.size() / size; ++i) {
      const uint8_t *p = t.data.data() + i * size;
      if (t.dtype == "F32") {
        float v;
        std::memcpy(&v, p, 4);
        std::printf(" %.9g", v);
      } else if (t.dtype == "F64") {
        double v;
        std::memcpy(&v, p, 8);
        std::printf(" %.17g", v);
      } else if (t.dtype == "I32") {
        int32_t v;
        std::memcpy(&v, p, 4);
        std::printf(" %d", v);
      } else {
        int64_t v;
        std::memcpy(&v, p, 8);
        std::printf(" %lld", static_cast<long long>(v));
      }
    }
    std::printf("\n");
  }
  return 0;
}
