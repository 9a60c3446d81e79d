// CRC-32C (Castagnoli, polynomial 0x1EDC6F41, reflected), and the "masked" form TFRecord framing uses.
//
// Why: `gridrun export --format tensorboard` writes TensorBoard event files, whose records are
// framed as TFRecords: every length and every payload is followed by its masked CRC-32C, and
// TensorBoard's reader checks them. A table-driven byte-at-a-time implementation (256 entries, made
// once) is plenty for files of a few megabytes and keeps base free of libraries.
#pragma once

#include <cstddef>
#include <cstdint>

namespace gridrun::base {

// CRC-32C of `size` bytes at `data` (crc32c("123456789") = 0xE3069283).
std::uint32_t crc32c(const void* data, std::size_t size);
// Continues a CRC over more bytes: crc32c_extend(crc32c(a), b) == crc32c(a + b).
std::uint32_t crc32c_extend(std::uint32_t crc, const void* data, std::size_t size);
// TFRecord's mask (tensorflow/core/lib/hash/crc32c.h): rotate right by 15 bits, add 0xA282EAD8.
// Why a mask: a CRC over data that itself holds CRCs is weak; TensorFlow stores them masked.
std::uint32_t crc32c_masked(const void* data, std::size_t size);

}  // namespace gridrun::base
