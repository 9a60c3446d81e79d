// Files: reading whole files, writing them so that a crash never leaves a half-written one, and
// setting aside a damaged one.
//
// Why fsync twice: rename() is atomic for readers, but after a power loss the new name may point
// at an empty file unless the data was synced before the rename, and the rename itself may be lost
// unless the directory was synced after it. Every state, job and index file gridrun writes goes
// through write_file_atomic, so each is either the old or the new content, never a mix.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gridrun::base {

// `path` as another process would be handed it: absolute (the working directory in front of a
// relative one); as given when it is empty or the working directory cannot be read. For checks
// and messages on paths that travel (a warm worker's task messages name files under --out).
std::string absolute_path(const std::string& path);

// What gridrun expects of a file it reads: the rules of the one guarded way to open it (issue 57).
// Why: a FIFO in place of a run file blocked every command for ever, and a link to /dev/zero (or a
// sparse file of gigabytes) was read whole before any check. Every kind has its own cap, checked
// from fstat before the first byte is read; the kinds and their caps are one table,
// file_kinds.hpp, which docs/architecture.md ("Hostile input") lists.
struct FileKind {
  std::string_view name;    // what a message calls it: "state file", "heartbeat", ...
  std::uint64_t max_bytes;  // a larger file is refused, never read
  bool follow_links;        // false: a symbolic link in its place is refused (O_NOFOLLOW)
};

// A descriptor closed when it goes out of scope, so that no early exit (a throw) leaks one.
class UniqueFd {
 public:
  UniqueFd() = default;
  explicit UniqueFd(int fd) : fd_(fd) {}
  ~UniqueFd() { reset(); }
  UniqueFd(UniqueFd&& o) noexcept : fd_(o.release()) {}
  UniqueFd& operator=(UniqueFd&& o) noexcept {
    if (this != &o) {
      reset();
      fd_ = o.release();
    }
    return *this;
  }
  UniqueFd(const UniqueFd&) = delete;
  UniqueFd& operator=(const UniqueFd&) = delete;
  int get() const { return fd_; }
  bool valid() const { return fd_ >= 0; }
  int release() {
    const int f = fd_;
    fd_ = -1;
    return f;
  }
  void reset();

 private:
  int fd_ = -1;
};

// A file opened by open_checked: the descriptor, or why not.
struct CheckedOpen {
  UniqueFd fd;             // invalid on failure
  std::uint64_t size = 0;  // st_size at the open
  int err = 0;             // errno of a failed open (ENOENT: no such file); 0 when refused by a check
  std::string message;     // "" when open; else names the file, and for a refusal its kind and cap
  bool missing() const { return err == ENOENT || err == ENOTDIR; }
};

// The one guarded open of a file gridrun reads (or appends to). O_NONBLOCK, so that a FIFO or a
// device in the file's place answers at once instead of blocking until a writer comes;
// O_NOFOLLOW unless kind.follow_links; O_CLOEXEC; then fstat: only a regular file is kept
// (anything else is refused: "PATH: not read as a KIND (a regular file of at most CAP): it is a
// FIFO"), and, when opened for reading (O_RDONLY), one of at most kind.max_bytes. `flags` adds to
// those (O_RDONLY, or O_WRONLY | O_APPEND | O_CREAT with `mode`).
CheckedOpen open_checked(const std::string& path, const FileKind& kind, int flags = 0, mode_t mode = 0);

// The checks of open_checked made from lstat (stat when kind.follow_links), without opening the
// file: for a file that another library opens by its name (libhdf5 a results file, which must be
// opened once only). "" when open_checked would open it; else its message. `err` (when given): the
// errno of a failed stat (ENOENT: no such file), else 0.
std::string check_before_open(const std::string& path, const FileKind& kind, int* err = nullptr);

// The whole file, opened by open_checked and read with the kind's cap as bound (a file that grows
// past it while read, or a /proc file whose size fstat does not tell, is refused too). Throws
// std::runtime_error with open_checked's message ("PATH: cannot read: CAUSE" for an errno).
std::string read_file(const std::string& path, const FileKind& kind);
// As read_file, but nullopt instead of a throw: when the file does not exist (`refused`, when
// given, is then ""), or when it cannot be read or is refused (`refused` gets the message, for a
// caller that warns).
std::optional<std::string> try_read_file(const std::string& path, const FileKind& kind,
                                         std::string* refused = nullptr);

// Reads the file (opened by open_checked) in blocks of at most `block` bytes and hands each to
// `fn`, never holding the whole file (a model archive of hundreds of MB hashed by sha256_file).
// Throws std::runtime_error with open_checked's message, or "PATH: cannot read: CAUSE".
void read_file_blocks(const std::string& path, const FileKind& kind, std::size_t block,
                      const std::function<void(const unsigned char* data, std::size_t size)>& fn);

// Opens a log that gridrun and its jobs append to (a job's logs/<id>.out and .err):
// O_WRONLY | O_APPEND | O_CREAT (0644) through open_checked, so never through a link. Something
// else than a regular file in its place (a link to a file outside the run, a FIFO) is removed and
// a new file made: `replaced` then says so, naming the file, for the caller's warning; output meant
// for the run never lands elsewhere, and a FIFO never blocks a write. Throws std::runtime_error
// naming the file when it still cannot be opened.
UniqueFd open_log_for_append(const std::string& path, const FileKind& kind, std::string& replaced);

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

// write_file_atomic in pieces, for data too large to build whole in memory first (the results
// index of 100,000 jobs is 274 MB, and each piece copied into the page cache while still in the
// CPU's cache costs a fraction of a cold copy). The temporary (PATH.tmp.PID) is made by the
// constructor; commit() renames it over `path` (with write_file_atomic's fsyncs when `durable`);
// a writer destroyed uncommitted (an exception on the way) removes it. Throws as write_file_atomic.
class AtomicFileWriter {
 public:
  explicit AtomicFileWriter(std::string path, unsigned mode = 0644);
  ~AtomicFileWriter();
  AtomicFileWriter(const AtomicFileWriter&) = delete;
  AtomicFileWriter& operator=(const AtomicFileWriter&) = delete;
  void append(std::string_view data);
  void commit(bool durable = true);

 private:
  [[noreturn]] void fail(const char* step, int err);
  std::string path_, tmp_;
  UniqueFd fd_;
};

// Renames `from` to `to` and fsyncs the directory of `to` (for files written by another library,
// e.g. HDF5, that are complete and synced). Throws std::runtime_error naming both paths.
void rename_durable(const std::string& from, const std::string& to);
// What identifies one version of a file or folder, from lstat: "INODE:SIZE:MTIME_NS:CTIME_NS",
// "absent" when there is none, "error:ERRNO" when it cannot be seen. Caches compare two stamps
// to tell "nothing changed" without reading (a rename over it, a new entry in a folder, a write
// all change it; the run summary, run/run_summary.hpp).
std::string stat_stamp(const std::string& path);
// The stamp of a folder and of every entry in it (not below): a digest of the folder's stat_stamp
// and each entry's name and lstat, so that a file changed in place (truncated, rewritten without
// a rename) changes it too. One readdir and one fstatat per entry (about 1 us each when cached).
struct FolderStampOptions {
  bool own = true;                // the folder's own stat_stamp too (a rename in it changes that)
  std::vector<std::string> skip;  // entries left out (files rewritten by every reader of the folder)
};
std::string folder_entries_stamp(const std::string& dir, const FolderStampOptions& opts = {});
// The same, entry by entry, for a cache that wants to know which entries changed (the status of a
// run where 10 of 100,000 results files changed re-reads those 10): each entry's name and the
// hash of its name and lstat, in the folder's order; std::nullopt with
// the errno in *err when the folder cannot be listed. folder_entries_stamp's digest of them is
// entries_digest.
struct EntryStamp {
  std::string name;
  std::uint64_t hash = 0;
};
std::optional<std::vector<EntryStamp>> folder_entry_stamps(const std::string& dir,
                                                           const FolderStampOptions& opts, int* err);
std::string entries_digest(const std::vector<EntryStamp>& entries);
// The names in a folder but "." and "..", in the folder's order (one readdir, no stat): what a
// caller that checks many names of one folder asks once instead of a stat per name (100,000 job
// files). std::nullopt with the errno in *err when the folder cannot be listed.
std::optional<std::vector<std::string>> list_folder(const std::string& dir, int* err = nullptr);
// fsync of a directory; best effort (errors are ignored: not every file system supports it).
void fsync_dir(const std::string& dir);

// Moves a damaged file aside as PATH.damaged (PATH.damaged.2, ... when that exists) so that it is
// never trusted again and never lost. Returns the new path, or "" when it could not be moved.
std::string quarantine(const std::string& path);

}  // namespace gridrun::base
