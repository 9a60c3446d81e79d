// The results folder's journal (<folder>/.gridrun-journal): the record each finished job file's
// writer appends as it renames the file into place, so that the first command to look at a run of
// 100,000 finished jobs reads one file instead of opening every job file with libhdf5 (issue 60:
// the first adoption took 334 s). Private to results/.
//
// Trust: a record is used for a file only while the file's stat (device, inode, size, mtime,
// ctime) is the one the writer saw right after its rename, as the index's entries are; a file
// changed since (a rewrite, a copy over it, a flipped byte: at least its ctime) is read again. The
// record is what a reader's fresh read makes (record_of_file, the same code as the run reader's
// guarded copy), read back by the writer from the file it has just closed. Each record is framed
// (magic, length, checksum): a torn or damaged one is skipped and its file read, never fatal.
// The journal is a cache: a command that has put its records into the index (run_reader.cpp)
// empties it.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "gridrun/base/bytes.hpp"
#include "gridrun/results/format.hpp"
#include "gridrun/run/run_dir.hpp"

namespace gridrun::results::detail {

// What identifies one version of a file: a rewrite (the writer renames .partial over it), a copy
// or a changed byte with a touch back to the old mtime all change at least the ctime or inode.
struct StatKey {
  std::uint64_t dev = 0, ino = 0, size = 0;
  std::int64_t mtime_ns = 0, ctime_ns = 0;
  bool operator==(const StatKey& o) const {
    return dev == o.dev && ino == o.ino && size == o.size && mtime_ns == o.mtime_ns && ctime_ns == o.ctime_ns;
  }
};

// The stat of `path`, or std::nullopt with the errno in *err.
std::optional<StatKey> stat_key(const std::string& path, int* err);
// A StatKey in the index's and the journal's byte layout (base/bytes.hpp).
void put_stat_key(base::ByteWriter& w, const StatKey& k);
StatKey get_stat_key(base::ByteReader& r);

// FNV-1a over 8-byte words (then the tail): the index's and the journal's checksum. Not
// cryptographic; it tells a torn or bit-flipped record from a whole one.
std::uint64_t checksum(std::string_view s);
// The same over bytes given in pieces (an index written as it is rendered): update() with each
// piece in order, then value() equals checksum() of them all together.
class Checksum {
 public:
  void update(std::string_view s);
  std::uint64_t value() const;

 private:
  std::uint64_t h_ = 1469598103934665603ULL;
  char tail_[8] = {};
  std::size_t tail_n_ = 0;  // bytes of an unfinished word, kept for the next piece
};

inline constexpr const char* kJournalName = run::RunDir::kResultsJournalName;

// A job file read whole in this process and encoded to `depth` (at least Summary): what the run
// reader's guarded copy sends back and what the journal keeps. Throws on an unreadable file.
std::string record_of_file(const std::string& path, Depth depth);

// Appends the record of the finished job file `path` (just renamed into place by this process) to
// its folder's journal when that folder is a run's results/ (RunDir::holds_run of its parent).
// `job`: the file as its writer read it back before the rename (JobWriter::finish reads it whole
// for the derived figures), summary included; encoded as a fresh read would be (record_of_file).
// Best effort: a failure leaves the file to be read by the next command.
void journal_finished_file(const std::string& path, JobData job) noexcept;

// The index's delta (run_reader.cpp): a reader that read a few files again appends their records
// here instead of rewriting an index of every job (274 MB at 100,000 jobs) for them; the journal
// is then the index's newer part until a reader writes the index whole. `records`: the frames of
// journal_frame, one write. Throws std::runtime_error when the journal cannot be appended to.
std::string journal_frame(const std::string& name, const StatKey& key, std::string_view record);
void append_to_journal(const std::string& folder, const std::string& frames);
// The journal's size in bytes now (0: none, or something else in its place).
std::size_t journal_size(const std::string& folder);

struct JournalEntry {
  StatKey key;
  std::string_view record;  // encode_job(..., Depth::Summary), in the bytes read_journal kept
};
// The journal's whole records by file name (the last one of a name wins); damaged frames skipped.
// An absent or refused journal (a FIFO, a link, over its cap) is empty. `bytes`: the journal as
// read, which the records point into (no copy of 274 MB of records at 100,000 jobs).
std::unordered_map<std::string, JournalEntry> read_journal(const std::string& folder, std::string& bytes);

// After the index holds the journal's records: the journal is emptied, except for records the
// index does not hold (files not asked for, records appended since it was read) whose files are
// still as they recorded (put back). `all_taken_at`: the journal's size when read, when every
// record read from it went into the index: if it is still that size, nothing is left to put back
// and it is not read again. Best effort, never throws. `in_index(name, key)`: whether the index
// now holds that file at that stat.
void empty_journal(const std::string& folder, std::optional<std::size_t> all_taken_at,
                   const std::function<bool(const std::string&, const StatKey&)>& in_index) noexcept;

}  // namespace gridrun::results::detail
