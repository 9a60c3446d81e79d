// Unit tests of crc32c.hpp against published vectors: the CRC catalogue's check value, RFC 3720's
// (iSCSI) test patterns, and TensorFlow's masked value of a record length. A wrong CRC makes
// TensorBoard drop every record of an exported event file ("DataLossError: ... checksum").
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gridrun/base/crc32c.hpp"

using gridrun::base::crc32c;
using gridrun::base::crc32c_extend;
using gridrun::base::crc32c_masked;

TEST(Crc32c, CheckValue) {
  const std::string s = "123456789";
  EXPECT_EQ(crc32c(s.data(), s.size()), 0xE3069283u);
  EXPECT_EQ(crc32c(s.data(), 0), 0u);
}

// RFC 3720, B.4: 32 bytes of zeros, of ones, ascending and descending.
TEST(Crc32c, Rfc3720Vectors) {
  std::vector<unsigned char> b(32, 0);
  EXPECT_EQ(crc32c(b.data(), b.size()), 0x8A9136AAu);
  std::fill(b.begin(), b.end(), 0xFF);
  EXPECT_EQ(crc32c(b.data(), b.size()), 0x62A8AB43u);
  for (int i = 0; i < 32; ++i) b[i] = static_cast<unsigned char>(i);
  EXPECT_EQ(crc32c(b.data(), b.size()), 0x46DD794Eu);
  for (int i = 0; i < 32; ++i) b[i] = static_cast<unsigned char>(31 - i);
  EXPECT_EQ(crc32c(b.data(), b.size()), 0x113FDB5Cu);
}

TEST(Crc32c, ExtendEqualsWhole) {
  const std::string s = "The quick brown fox jumps over the lazy dog";
  for (std::size_t cut = 0; cut <= s.size(); ++cut)
    EXPECT_EQ(crc32c_extend(crc32c(s.data(), cut), s.data() + cut, s.size() - cut),
              crc32c(s.data(), s.size()))
        << "cut at " << cut;
}

// The mask of TensorFlow's crc32c.h (rotate right by 15, add 0xa282ead8); the expected values are
// what the tensorboard package's own masked_crc32c returns (tensorflow_stub/pywrap_tensorflow.py).
TEST(Crc32c, Masked) {
  const std::string s = "123456789";
  EXPECT_EQ(crc32c_masked(s.data(), s.size()), 0xC78AB0E5u);
  // An 8-byte little-endian length 0: the header of a TFRecord with an empty payload.
  const unsigned char zero[8] = {};
  EXPECT_EQ(crc32c_masked(zero, 8), 0x07980329u);
}
