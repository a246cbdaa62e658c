//===- Crc32c.cpp - CRC-32C (Castagnoli) of a byte range ------------------===//

#include "runtime/store/Crc32c.h"

#include <array>
#include <cstring>

namespace whale::rt {

namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u; // reflected Castagnoli

/// table[k][b]: the CRC of byte b followed by k zero bytes.
using Tables = std::array<std::array<uint32_t, 256>, 8>;

const Tables &tables() {
  static const Tables t = [] {
    Tables out{};
    for (uint32_t b = 0; b < 256; ++b) {
      uint32_t c = b;
      for (int k = 0; k < 8; ++k)
        c = c & 1 ? kPolynomial ^ (c >> 1) : c >> 1;
      out[0][b] = c;
    }
    for (uint32_t b = 0; b < 256; ++b)
      for (int k = 1; k < 8; ++k)
        out[k][b] = (out[k - 1][b] >> 8) ^ out[0][out[k - 1][b] & 0xFF];
    return out;
  }();
  return t;
}

/// On the raw (not inverted) register.
uint32_t portable(const uint8_t *p, size_t n, uint32_t c) {
  const Tables &t = tables();
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    w ^= c; // little-endian: the register meets the first four bytes
    c = t[7][w & 0xFF] ^ t[6][(w >> 8) & 0xFF] ^ t[5][(w >> 16) & 0xFF] ^
        t[4][(w >> 24) & 0xFF] ^ t[3][(w >> 32) & 0xFF] ^
        t[2][(w >> 40) & 0xFF] ^ t[1][(w >> 48) & 0xFF] ^ t[0][w >> 56];
    p += 8;
    n -= 8;
  }
  while (n--)
    c = t[0][(c ^ *p++) & 0xFF] ^ (c >> 8);
  return c;
}

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
__attribute__((target("sse4.2"))) uint32_t hardware(const uint8_t *p, size_t n,
                                                    uint32_t c) {
  uint64_t c64 = c;
  while (n >= 8) {
    uint64_t w;
    std::memcpy(&w, p, 8);
    c64 = __builtin_ia32_crc32di(c64, w);
    p += 8;
    n -= 8;
  }
  uint32_t c32 = static_cast<uint32_t>(c64);
  while (n--)
    c32 = __builtin_ia32_crc32qi(c32, *p++);
  return c32;
}
bool hasHardware() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#else
uint32_t hardware(const uint8_t *p, size_t n, uint32_t c) {
  return portable(p, n, c);
}
bool hasHardware() { return false; }
#endif

} // namespace

uint32_t crc32c(const void *data, size_t size, uint32_t crc) {
  const auto *p = static_cast<const uint8_t *>(data);
  return ~(hasHardware() ? hardware(p, size, ~crc) : portable(p, size, ~crc));
}

uint32_t crc32cPortable(const void *data, size_t size, uint32_t crc) {
  return ~portable(static_cast<const uint8_t *>(data), size, ~crc);
}

} // namespace whale::rt
