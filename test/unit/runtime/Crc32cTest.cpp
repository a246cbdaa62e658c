//===- Crc32cTest.cpp - the store's checksum ------------------------------===//

#include "runtime/store/Crc32c.h"

#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

namespace {

using whale::rt::crc32c;
using whale::rt::crc32cPortable;

TEST(Crc32c, MatchesTheStandardCheckValue) {
  // The check value of CRC-32C (RFC 3720's test of "123456789").
  const std::string digits = "123456789";
  EXPECT_EQ(crc32c(digits.data(), digits.size()), 0xE3069283u);
  EXPECT_EQ(crc32cPortable(digits.data(), digits.size()), 0xE3069283u);
  EXPECT_EQ(crc32c(nullptr, 0), 0u);
  // 32 zero bytes (RFC 3720, B.4).
  std::vector<uint8_t> zeros(32, 0);
  EXPECT_EQ(crc32c(zeros.data(), zeros.size()), 0x8A9136AAu);
}

TEST(Crc32c, TheInstructionAndTheTablesAgreeOnEveryLengthAndAlignment) {
  std::mt19937 rng(7);
  std::vector<uint8_t> bytes(4099);
  for (uint8_t &b : bytes)
    b = static_cast<uint8_t>(rng());
  for (size_t start : {0, 1, 3, 7})
    for (size_t n : {0, 1, 7, 8, 9, 63, 64, 1000, 4092})
      EXPECT_EQ(crc32c(bytes.data() + start, n),
                crc32cPortable(bytes.data() + start, n))
          << "start " << start << ", " << n << " bytes";
  // In pieces, continuing from the last piece's value.
  uint32_t whole = crc32c(bytes.data(), bytes.size());
  uint32_t pieces = crc32c(bytes.data(), 1001);
  pieces = crc32c(bytes.data() + 1001, bytes.size() - 1001, pieces);
  EXPECT_EQ(pieces, whole);
  // One flipped bit changes it.
  bytes[2000] ^= 4;
  EXPECT_NE(crc32c(bytes.data(), bytes.size()), whole);
}

} // namespace
