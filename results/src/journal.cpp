// See journal.hpp.
#include "journal.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "gridrun/base/bytes.hpp"
#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/results/summary.hpp"
#include "gridrun/run/run_dir.hpp"
#include "job_codec.hpp"
#include "reading.hpp"

namespace gridrun::results::detail {

namespace fs = std::filesystem;

namespace {

constexpr std::uint64_t kFrameMagic = 0x314c4e524a445247ULL;  // "GRDJRNL1" little-endian
constexpr std::size_t kFrameHead = 16;                        // magic + body length
constexpr std::size_t kFrameTail = 8;                         // checksum of the body

std::string journal_path(const std::string& folder) { return (fs::path(folder) / kJournalName).string(); }

std::string frame(const std::string& name, const StatKey& k, std::string_view record) {
  base::ByteWriter body;
  body.str(name);
  put_stat_key(body, k);
  body.str(record);
  base::ByteWriter out;
  out.u64(kFrameMagic);
  out.u64(body.bytes().size());
  out.raw(body.bytes().data(), body.bytes().size());
  out.u64(checksum(body.bytes()));
  return std::move(out.bytes());
}

// One write of a whole frame (O_APPEND: concurrent writers' frames do not interleave on a local
// file system; where they might, the checksum drops what did).
void append(const std::string& folder, const std::string& bytes) {
  std::string replaced;
  const base::UniqueFd fd =
      base::open_log_for_append(journal_path(folder), base::kinds::kResultsJournal, replaced);
  const ssize_t n = ::write(fd.get(), bytes.data(), bytes.size());
  if (n != static_cast<ssize_t>(bytes.size())) throw std::runtime_error("short write");
}

}  // namespace

std::string journal_frame(const std::string& name, const StatKey& key, std::string_view record) {
  return frame(name, key, record);
}

void append_to_journal(const std::string& folder, const std::string& frames) {
  if (!frames.empty()) append(folder, frames);
}

std::size_t journal_size(const std::string& folder) {
  struct stat st {};
  if (::lstat(journal_path(folder).c_str(), &st) != 0 || !S_ISREG(st.st_mode)) return 0;
  return static_cast<std::size_t>(st.st_size);
}

std::optional<StatKey> stat_key(const std::string& path, int* err) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    *err = errno;
    return std::nullopt;
  }
  StatKey k;
  k.dev = st.st_dev;
  k.ino = st.st_ino;
  k.size = static_cast<std::uint64_t>(st.st_size);
  k.mtime_ns = static_cast<std::int64_t>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec;
  k.ctime_ns = static_cast<std::int64_t>(st.st_ctim.tv_sec) * 1000000000LL + st.st_ctim.tv_nsec;
  return k;
}

void put_stat_key(base::ByteWriter& w, const StatKey& k) {
  w.u64(k.dev);
  w.u64(k.ino);
  w.u64(k.size);
  w.i64(k.mtime_ns);
  w.i64(k.ctime_ns);
}

StatKey get_stat_key(base::ByteReader& r) {
  StatKey k;
  k.dev = r.u64();
  k.ino = r.u64();
  k.size = r.u64();
  k.mtime_ns = r.i64();
  k.ctime_ns = r.i64();
  return k;
}

void Checksum::update(std::string_view s) {
  constexpr std::uint64_t kPrime = 1099511628211ULL;
  std::size_t i = 0;
  if (tail_n_ > 0) {
    while (tail_n_ < 8 && i < s.size()) tail_[tail_n_++] = s[i++];
    if (tail_n_ < 8) return;
    std::uint64_t w;
    std::memcpy(&w, tail_, 8);
    h_ = (h_ ^ w) * kPrime;
    tail_n_ = 0;
  }
  for (; i + 8 <= s.size(); i += 8) {
    std::uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    h_ = (h_ ^ w) * kPrime;
  }
  for (; i < s.size(); ++i) tail_[tail_n_++] = s[i];
}

std::uint64_t Checksum::value() const {
  std::uint64_t h = h_;
  for (std::size_t i = 0; i < tail_n_; ++i) h = (h ^ static_cast<unsigned char>(tail_[i])) * 1099511628211ULL;
  return h;
}

std::uint64_t checksum(std::string_view s) {
  Checksum c;
  c.update(s);
  return c.value();
}

namespace {
// What a reader keeps of a job read whole: a running or killed job's figures come from its rows
// (as record_of did), here where the rows are, so that a shallower record still carries them.
std::string record_of_job(JobData& d, Depth depth) {
  if (d.status.empty()) throw std::runtime_error("no status attribute");
  if (d.summary.empty()) d.summary = derive_summary(d);
  return encode_job(d, std::max(depth, Depth::Summary));
}
}  // namespace

std::string record_of_file(const std::string& path, Depth depth) {
  ReadOptions ro;
  ro.isolate = false;  // the caller's process is the isolated copy
  JobData d = read_job_here(path, ro);
  return record_of_job(d, depth);
}

void journal_finished_file(const std::string& path, JobData job) noexcept {
  try {
    // Only in a run's results folder (a run directory holds it): a folder a user gave
    // gridrun-train for its file alone gets that file alone.
    const fs::path p(path);
    if (!run::RunDir(p.parent_path().parent_path().string()).holds_run()) return;
    const std::string record = record_of_job(job, Depth::Summary);
    int err = 0;
    const std::optional<StatKey> key = stat_key(path, &err);
    if (!key) return;
    append(p.parent_path().string(), frame(p.filename().string(), *key, record));
  } catch (...) {
    // A cache: the next command reads the file itself.
  }
}

namespace {

std::unordered_map<std::string, JournalEntry> read_journal_file(const std::string& path, std::string& bytes) {
  std::unordered_map<std::string, JournalEntry> out;
  std::string refused;
  auto read = base::try_read_file(path, base::kinds::kResultsJournal, &refused);
  bytes = read ? std::move(*read) : std::string();
  const std::string_view all = bytes;
  const std::string_view magic(reinterpret_cast<const char*>(&kFrameMagic), sizeof kFrameMagic);
  std::size_t at = 0;
  while (at + kFrameHead + kFrameTail <= all.size()) {
    bool whole = false;
    std::uint64_t len = 0;
    if (all.substr(at, 8) == magic) {
      std::memcpy(&len, all.data() + at + 8, 8);
      if (len <= all.size() - at - kFrameHead - kFrameTail) {
        const std::string_view body = all.substr(at + kFrameHead, len);
        std::uint64_t sum = 0;
        std::memcpy(&sum, all.data() + at + kFrameHead + len, 8);
        if (sum == checksum(body)) {
          try {
            base::ByteReader r(body);
            std::string name = r.str();
            JournalEntry e;
            e.key = get_stat_key(r);
            e.record = r.view();
            if (r.done()) {
              out[std::move(name)] = e;
              whole = true;
            }
          } catch (const std::exception&) {
          }
        }
      }
    }
    if (whole) {
      at += kFrameHead + len + kFrameTail;
      continue;
    }
    // A damaged or torn frame: on from the next magic after its start.
    const std::size_t next = all.find(magic, at + 1);
    if (next == std::string_view::npos) break;
    at = next;
  }
  return out;
}

}  // namespace

std::unordered_map<std::string, JournalEntry> read_journal(const std::string& folder, std::string& bytes) {
  return read_journal_file(journal_path(folder), bytes);
}

void empty_journal(const std::string& folder, std::optional<std::size_t> all_taken_at,
                   const std::function<bool(const std::string&, const StatKey&)>& in_index) noexcept {
  try {
    const std::string path = journal_path(folder);
    std::error_code ec;
    if (!fs::exists(fs::symlink_status(path, ec))) return;
    // Moved aside first: a writer that appends from now on starts a new journal, and one that
    // appended between our read and this rename is found in the moved file and put back.
    const std::string aside = path + "." + std::to_string(::getpid()) + ".old";
    if (::rename(path.c_str(), aside.c_str()) != 0) return;
    // Every record read went into the index and nothing was appended since (its size then).
    struct stat st {};
    if (all_taken_at && ::lstat(aside.c_str(), &st) == 0 && S_ISREG(st.st_mode) &&
        static_cast<std::size_t>(st.st_size) == *all_taken_at) {
      ::unlink(aside.c_str());
      return;
    }
    std::string keep;
    std::string bytes;
    for (const auto& [name, e] : read_journal_file(aside, bytes)) {
      if (in_index(name, e.key)) continue;
      int err = 0;
      const auto now = stat_key((fs::path(folder) / name).string(), &err);
      if (now && *now == e.key) keep += frame(name, e.key, e.record);
    }
    ::unlink(aside.c_str());
    if (!keep.empty()) append(folder, keep);
  } catch (...) {
    // A cache: what could not be put back is read from its file next time.
  }
}

}  // namespace gridrun::results::detail
