//===- Crc32.h - CRC-32 of a byte range --------------------------*- C++
//-*-===//
//
// The CRC-32 of zlib, PNG and Ethernet (reflected polynomial 0xEDB88320),
// so `zlib.crc32` in Python reads the same value a checkpoint stores. The
// runtime links no LLVM, so it has its own, table-driven.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_STORE_CRC32_H
#define WHALE_RUNTIME_STORE_CRC32_H

#include <array>
#include <cstddef>
#include <cstdint>

namespace whale::rt {

inline uint32_t crc32(const uint8_t *data, size_t size, uint32_t crc = 0) {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    for (uint32_t i = 0; i < 256; ++i) {
      uint32_t c = i;
      for (int k = 0; k < 8; ++k)
        c = c & 1 ? 0xEDB88320u ^ (c >> 1) : c >> 1;
      t[i] = c;
    }
    return t;
  }();
  crc = ~crc;
  for (size_t i = 0; i < size; ++i)
    crc = table[(crc ^ data[i]) & 0xFF] ^ (crc >> 8);
  return ~crc;
}

} // namespace whale::rt

#endif
