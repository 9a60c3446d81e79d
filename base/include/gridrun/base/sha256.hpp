// SHA-256 (FIPS 180-4) of memory and of files, as lowercase hex.
//
// Why: the job id of a `model: torchscript` job includes the content hash of its model file (issue
// 33), so that replacing the file under the same name makes a new job instead of reusing results
// measured with the old model; results files record the same hash so that users can check it with
// `sha256sum`. Why our own implementation rather than OpenSSL: base depends on no library but the
// C++ standard library and nlohmann-json, and one hash over a few files per command needs no
// hardware-accelerated one.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <string>

namespace gridrun::base {

// Incremental hash: update() with the bytes in order, then hex_digest(). hex_digest() works on a
// copy of the state, so it may be called at any point and updating may go on after it.
class Sha256 {
 public:
  Sha256();
  void update(const void* data, std::size_t size);
  std::string hex_digest() const;  // 64 lowercase hex characters

 private:
  void compress(const unsigned char* block);  // one 64-byte block into state_

  std::array<std::uint32_t, 8> state_;
  std::array<unsigned char, 64> buffer_{};  // a block not yet full
  std::size_t buffered_ = 0;                // bytes in buffer_
  std::uint64_t length_ = 0;                // bytes hashed in all
};

// The hash of `size` bytes at `data`, as 64 lowercase hex characters (what `sha256sum` prints).
std::string sha256_hex(const void* data, std::size_t size);
// The hash of a file's content, read in 1 MiB blocks (a model file may be gigabytes; it is never
// held whole). Throws std::runtime_error "PATH: cannot read: CAUSE".
std::string sha256_file(const std::string& path);

// sha256_file, remembered by the file's stat (device, inode, size, mtime and ctime in ns) in
// `cache_file`, a small JSON file (at most 4096 files, the oldest dropped first), so that a data
// file of gigabytes is read once and then planned in the time of a stat (issue 45: its hash is in
// the job id). ctime changes with every write and cannot be set back, so a file rewritten in place
// misses. Like git's index, a file changed within 2 s of hashing (a timestamp may not tell two
// writes of the same size apart) or during it is not remembered. The cache is an optimisation
// only: a missing, damaged or unwritable one is read as empty and rewritten, never an error. One
// that is there but cannot be used (not a regular file, not JSON, not the cache's shape) or holds
// bad entries (a stat that is not 5 integers, a hash that is not 64 hex digits) is rebuilt without
// them, and `warning` (when given) says so, naming the file; else it is left empty. The cache only
// spares plan a read: gridrun-train hashes the data file again (issue 57: an entry with a file's
// new stat and an old hash is believed here). `cache_file` "" = no cache.
std::string sha256_file_cached(const std::string& path, const std::string& cache_file,
                               std::string* warning = nullptr);
// $XDG_CACHE_HOME/gridrun/sha256.json, else $HOME/.cache/gridrun/sha256.json, else "".
std::string default_sha256_cache();

}  // namespace gridrun::base
