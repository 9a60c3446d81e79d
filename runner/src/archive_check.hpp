// A structural check of a LibTorch archive (a checkpoint's state.pt or rng-*.pt) before LibTorch
// reads it (issue 24).
//
// Why: LibTorch 1.13's reader trusts the lengths inside the file. One flipped byte in a pickle's
// BINUNICODE length made it allocate and zero a 1 GB string before noticing the file ends (1.4 s,
// 6 s under ASan, per damaged file); a memo id read as 4 billion makes it reserve tens of GB.
// And LibTorch's zip reader is built without miniz's CRC checks, so changed bytes in tensor data
// loaded silently as wrong weights, and changed bytes in the TorchScript code it compiles on load
// reached a throw inside a noexcept frame (std::terminate). Those are damaged files, and gridrun
// treats them as such: this walk of the zip directory (every record inside the file, sizes that
// agree, the CRC-32 of every record's bytes) and of every pickle's opcodes (the pickle format,
// protocols 0-5: every length within its record, every memo id within reason, a STOP at the end)
// rejects them before LibTorch allocates anything by them. Cost: one CRC pass over the file. It
// does not interpret the pickle: what passes still goes through LibTorch's own checks, and rank 0's
// trial read in a process of its own (Checkpointer) still bounds what this misses.
//
// Limits (issue 45): LibTorch reads a record whole into memory, so a small file whose one record
// is deflated from 1 GiB of zeros (a "deflate bomb", 1 MB on disk) cost a job 1,218 MB of memory,
// and a 6.3 MB file asked each rank for 6 GiB. torch.jit.save and torch::save store every record
// uncompressed (a stored record's bytes are the file's own), so only a repacked archive expands
// at all, and then by what text compresses to (code and pickles: 4-10x; weights: ~1.1x). The
// archive's records may add up to at most 16 times the file's size plus 64 MiB, and never more
// than the file's size plus 4 GiB (kMaxArchiveExpansion), and it holds at most 100,000 records
// (kMaxArchiveRecords: LibTorch writes one per tensor storage plus a few code files; a large
// model has a few thousand). The sizes the directory declares are checked before anything is
// inflated, and inflating stops at a record's declared size, so a bomb costs one 1 MiB buffer.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace gridrun::runner {

inline constexpr std::uint64_t kMaxArchiveRecords = 100'000;
inline constexpr std::uint64_t kArchiveExpansionRatio = 16;
inline constexpr std::uint64_t kArchiveExpansionSlack = std::uint64_t{64} << 20;  // 64 MiB
inline constexpr std::uint64_t kMaxArchiveExpansion = std::uint64_t{4} << 30;     // 4 GiB

// The most bytes the records of an archive of `file_size` bytes may decompress to, together.
std::uint64_t archive_decompressed_limit(std::uint64_t file_size);

// Throws std::runtime_error("<what> at byte N") for a damaged archive, and one naming the file,
// the record and the limit for an archive over the limits above; returns for a sound one.
// Reads the zip's end record, central directory and local headers, and every record once (CRC).
void check_torch_archive(const std::string& path);

// The pickle walk alone (exposed for tests): `what` names the record in messages.
void check_pickle(const unsigned char* data, std::size_t size, const std::string& what);

}  // namespace gridrun::runner
