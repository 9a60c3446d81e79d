// Files: reading whole files, writing them so that a crash never leaves a half-written one, and
// setting aside a damaged one.
//
// Why fsync twice: rename() is atomic for readers, but after a power loss the new name may point
// at an empty file unless the data was synced before the rename, and the rename itself may be lost
// unless the directory was synced after it. Every state, job and index file gridrun writes goes
// through write_file_atomic, so each is either the old or the new content, never a mix.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace gridrun::base {

// `path` as another process would be handed it: absolute (the working directory in front of a
// relative one); as given when it is empty or the working directory cannot be read. For checks
// and messages on paths that travel (a warm worker's task messages name files under --out).
std::string absolute_path(const std::string& path);

// The whole file; throws std::runtime_error "PATH: cannot read: CAUSE".
std::string read_file(const std::string& path);
// The whole file, or nullopt when it does not exist or cannot be read.
std::optional<std::string> try_read_file(const std::string& path);

// Reads the file in blocks of at most `block` bytes and hands each to `fn`, never holding the whole
// file (a model archive of hundreds of MB hashed by sha256_file). Throws std::runtime_error
// "PATH: cannot read: CAUSE".
void read_file_blocks(const std::string& path, std::size_t block,
                      const std::function<void(const unsigned char* data, std::size_t size)>& fn);

// Writes `data` to a temporary file beside `path` (same directory, so the rename is atomic),
// fsyncs it, renames it over `path` and fsyncs the directory. Throws std::runtime_error
// "PATH: cannot write: CAUSE" (ENOSPC included) and leaves neither a temporary nor a partial file.
// `mode`: the new file's permissions (before the umask); 0600 for a secret (RunDir::launch_token),
// which is then readable by its owner only from its first byte on.
void write_file_atomic(const std::string& path, std::string_view data, unsigned mode = 0644);

// As write_file_atomic, without the fsyncs: readers see the old or the new content, never a mix,
// but after a power loss either may be gone. For small files rewritten often whose loss costs
// nothing (the trainer's progress file, once a second from the training loop, where an fsync
// could stall a step). Throws as write_file_atomic.
void replace_file(const std::string& path, std::string_view data);

// Renames `from` to `to` and fsyncs the directory of `to` (for files written by another library,
// e.g. HDF5, that are complete and synced). Throws std::runtime_error naming both paths.
void rename_durable(const std::string& from, const std::string& to);
// fsync of a directory; best effort (errors are ignored: not every file system supports it).
void fsync_dir(const std::string& dir);

// Moves a damaged file aside as PATH.damaged (PATH.damaged.2, ... when that exists) so that it is
// never trusted again and never lost. Returns the new path, or "" when it could not be moved.
std::string quarantine(const std::string& path);

}  // namespace gridrun::base
