//===- Crc32c.h - CRC-32C (Castagnoli) of a byte range -----------*- C++
//-*-===//
//
// The checksum of the in-memory store's copies, which it takes over
// gigabytes every few steps: CRC-32C (reflected polynomial 0x82F63B78, as
// iSCSI, ext4 and SSE 4.2's crc32 instruction compute it), eight bytes an
// instruction where the processor has one (x86 SSE 4.2, checked at run
// time), else eight bytes a step by slicing tables. Files keep zlib's CRC-32
// (Crc32.h), which readers outside Whale check.
//
//===----------------------------------------------------------------------===//

#ifndef WHALE_RUNTIME_STORE_CRC32C_H
#define WHALE_RUNTIME_STORE_CRC32C_H

#include <cstddef>
#include <cstdint>

namespace whale::rt {

/// CRC-32C of `size` bytes, continuing from `crc` (0 to start).
uint32_t crc32c(const void *data, size_t size, uint32_t crc = 0);

/// The same by the tables alone, whatever the processor has: for tests.
uint32_t crc32cPortable(const void *data, size_t size, uint32_t crc = 0);

} // namespace whale::rt

#endif
