// See run_reader.hpp: one guarded child reads what the index cannot answer; the index keeps each
// finished file's verdict and record keyed by its stat.
#include "gridrun/results/run_reader.hpp"

#include <sched.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <filesystem>
#include <optional>
#include <unordered_map>

#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/spawn.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/results/summary.hpp"
#include "gridrun/run/run_dir.hpp"
#include "job_codec.hpp"
#include "journal.hpp"
#include "reading.hpp"

namespace gridrun::results {

namespace fs = std::filesystem;
using detail::ByteReader;
using detail::ByteWriter;
using detail::checksum;
using detail::stat_key;
using detail::StatKey;

namespace {

constexpr std::string_view kMagic = "GRIDRUN-INDEX-5\n";

enum class Verdict : std::uint64_t { Ok = 0, Unreadable = 1, Damaged = 2 };

struct Entry {
  StatKey key;
  Verdict verdict = Verdict::Ok;
  std::string reason;  // without the path
  // encode_job(..., Depth::Summary) when Ok: in `owned`, in the index's bytes or in the journal's
  std::string_view record;
  std::string owned;  // a record read from its file this time (the index's own stay in its bytes)
};

// Moves `e` into the map under `name`, its record pointing at its own copy (a std::string's buffer
// may move with it).
void put_entry(std::unordered_map<std::string, Entry>& entries, const std::string& name, Entry e) {
  Entry& slot = entries[name] = std::move(e);
  if (!slot.owned.empty()) slot.record = slot.owned;
}

std::unordered_map<std::string, Entry> parse_index(std::string_view bytes) {
  if (bytes.size() < kMagic.size() + 8 || bytes.substr(0, kMagic.size()) != kMagic)
    throw std::runtime_error("not an index of this version");
  const std::string_view body = bytes.substr(0, bytes.size() - 8);
  std::uint64_t sum;
  std::memcpy(&sum, bytes.data() + body.size(), 8);
  if (sum != checksum(body)) throw std::runtime_error("checksum mismatch");
  ByteReader r(body.substr(kMagic.size()));
  std::unordered_map<std::string, Entry> out;
  for (std::size_t n = r.count(80); n > 0; --n) {
    std::string name = r.str();
    Entry e;
    e.key = detail::get_stat_key(r);
    const std::uint64_t v = r.u64();
    if (v > 2) throw std::runtime_error("bad verdict");
    e.verdict = static_cast<Verdict>(v);
    e.reason = r.str();
    e.record = r.view();  // into `bytes`, which the caller keeps (no copy of 5 KB per job)
    out.emplace(std::move(name), std::move(e));
  }
  if (!r.done()) throw std::runtime_error("trailing bytes");
  return out;
}

// Renders the index into `path` (base::AtomicFileWriter) a megabyte at a time: 274 MB at 100,000
// jobs, built whole it was copied into the page cache from memory long out of the CPU's cache.
void write_index(const std::string& path, const std::unordered_map<std::string, Entry>& entries) {
  base::AtomicFileWriter out(path);
  ByteWriter w;
  detail::Checksum sum;
  auto spill = [&] {
    sum.update(w.bytes());
    out.append(w.bytes());
    w.bytes().clear();
  };
  w.raw(kMagic.data(), kMagic.size());
  w.u64(entries.size());
  // In name order, so that two commands that saw the same files write the same bytes. The names
  // (short: in the strings themselves) are copied beside their entries, so that the sort reads
  // one array rather than the map's scattered nodes.
  std::vector<std::pair<std::string, const Entry*>> sorted;
  sorted.reserve(entries.size());
  for (const auto& [name, e] : entries) sorted.emplace_back(name, &e);
  std::sort(sorted.begin(), sorted.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  for (const auto& [name, ep] : sorted) {
    const Entry& e = *ep;
    w.str(name);
    detail::put_stat_key(w, e.key);
    w.u64(static_cast<std::uint64_t>(e.verdict));
    w.str(e.reason);
    w.str(e.record);
    if (w.bytes().size() >= (std::size_t{1} << 20)) spill();
  }
  spill();
  const std::uint64_t total = sum.value();
  w.raw(&total, sizeof total);
  out.append(w.bytes());
  out.commit();
}

}  // namespace

namespace {
std::atomic<int> index_writes_off{0};  // IndexWritesOff objects alive
}  // namespace

struct ResultsFolder::Impl {
  std::string folder;
  bool use_index = true;
  IndexWriteOptions writes;
  bool loaded = false, dirty = false, rebuilt = false;
  // `whole`: the next flush must write the index whole (an entry left it, or one is not a
  // readable file's record, which the journal cannot hold). `fresh`: files read from disk since
  // the last flush, whose records a flush may append to the journal instead.
  bool whole = false;
  std::vector<std::string> fresh;
  std::string bytes;  // the index file as read: the entries' records point into it
  std::unordered_map<std::string, Entry> entries;
  // The journal (journal.hpp), read at the first file the index cannot answer; `journal_used`:
  // some of its records went into the index, which then takes the journal's place.
  bool journal_loaded = false, journal_used = false;
  // Emptied by the next whole write even when none of its records was taken: it passed its share
  // of the index (append_to_journal; records of files changed since are never taken), or this
  // command appended its own reads to it (checkpoint), which the index then holds.
  bool journal_over = false;
  std::unordered_map<std::string, detail::JournalEntry> journal;
  std::size_t journal_bytes = 0;  // its size when read
  std::string journal_buf;        // its bytes: the records taken from it point into them

  std::string index_path() const { return (fs::path(folder) / kIndexName).string(); }

  void load() {
    if (loaded || !use_index) return;
    loaded = true;
    // A FIFO, a link or an oversized file in its place reads as no index: rebuilt, and the rename
    // of the rebuilt one replaces it.
    std::string refused;
    auto read = base::try_read_file(index_path(), base::kinds::kResultsIndex, &refused);
    if (!read) {
      dirty = !refused.empty();
      rebuilt = true;
      return;
    }
    bytes = std::move(*read);
    try {
      entries = parse_index(bytes);
    } catch (const std::exception&) {
      entries.clear();  // damaged, torn or of another version: rebuilt from the job files
      rebuilt = dirty = true;
    }
  }

  // The journal frames of the files read since the last flush (their records as the index keeps them).
  std::string fresh_frames() const {
    std::string frames;
    for (const std::string& name : fresh) {
      const auto it = entries.find(name);
      if (it != entries.end() && it->second.verdict == Verdict::Ok)
        frames += detail::journal_frame(name, it->second.key, it->second.record);
    }
    return frames;
  }

  // The index's delta: when the index read is whole and large and only files read again changed it,
  // their records go to the journal (one append) rather than the index being written whole for
  // them; answers taken from the journal stay there. True when that was done (or nothing was
  // left to write). The journal is read by every command that misses the index, so it is kept
  // to a fraction of the index: past it, the index is written whole and the journal emptied.
  bool append_to_journal() {
    if (rebuilt || whole || bytes.size() < writes.delta_from_bytes) return false;
    const std::string frames = fresh_frames();
    const double limit = writes.max_journal_fraction * static_cast<double>(bytes.size());
    if (static_cast<double>(detail::journal_size(folder) + frames.size()) > limit) {
      journal_over = true;
      return false;
    }
    detail::append_to_journal(folder, frames);
    fresh.clear();
    dirty = journal_used = false;
    return true;
  }

  // One file's answer from the guarded copy that read it: `r` filled, its entry kept.
  void take_read(JobFileRead& r, const StatKey& key, const base::IsolatedRun& got,
                 const FolderReadOptions& opts, Depth sent, const std::vector<std::string>* keys_wanted) {
    Entry e;
    e.key = key;
    if (got.ok) {
      try {
        r.data = detail::decode_job(got.message, opts.whole_when_read ? sent : opts.depth,
                                    opts.whole_when_read ? nullptr : keys_wanted);
        r.data.path = r.path;
        r.ok = true;
        e.owned = sent == Depth::Summary
                      ? got.message
                      : detail::encode_job(detail::decode_job(got.message, Depth::Summary), Depth::Summary);
      } catch (const std::exception& ex) {
        e.verdict = Verdict::Unreadable;
        e.reason = std::string("cannot decode its record: ") + ex.what();
      }
    } else {
      e.verdict = got.no_answer ? Verdict::Damaged : Verdict::Unreadable;  // crashed, hung or exited
      e.reason = detail::guarded_read_failure(got);
      r.damaged = got.no_answer;
    }
    if (!r.ok) r.error = r.path + ": " + e.reason;
    keep_read(r.name, std::move(e));
  }

  // The records read so far, appended to the journal (FolderReadOptions::checkpoint_every): what
  // a command cut short leaves for the next. Best effort; the whole index is still written by the
  // flush, which then empties the journal of what it holds.
  void checkpoint() noexcept {
    if (!use_index || fresh.empty() || index_writes_off.load() > 0) return;
    try {
      const std::string frames = fresh_frames();
      detail::append_to_journal(folder, frames);
      fresh.clear();
      journal_over = true;
    } catch (...) {
    }
  }

  // A fresh read's entry, of a finished file only (a live `.partial` is never indexed).
  void keep_read(const std::string& name, Entry e) {
    if (!use_index || run::RunDir::is_partial_file(name)) return;
    if (e.verdict == Verdict::Ok)
      fresh.push_back(name);
    else
      whole = true;
    put_entry(entries, name, std::move(e));
    dirty = true;
  }

  // Answers `r` from the journal's record of its file when that record is of the file as it is
  // now (`key`), and puts it into the index like a fresh read's. False: read the file.
  bool answer_from_journal(JobFileRead& r, const StatKey& key, Depth depth,
                           const std::vector<std::string>* keys_wanted) {
    if (!journal_loaded) {
      journal_loaded = true;
      journal = detail::read_journal(folder, journal_buf);
      journal_bytes = journal_buf.size();
    }
    const auto it = journal.find(r.name);
    if (it == journal.end() || !(it->second.key == key)) return false;
    const std::string_view record = it->second.record;  // in journal_buf, which outlives the entries
    journal.erase(it);
    try {
      r.data = detail::decode_job(record, depth, keys_wanted);
    } catch (const std::exception&) {
      return false;  // a record that does not decode: the file is read
    }
    r.data.path = r.path;
    r.ok = r.from_index = true;
    Entry e;
    e.key = key;
    e.record = record;
    put_entry(entries, r.name, std::move(e));
    dirty = journal_used = true;
    return true;
  }
};

ResultsFolder::ResultsFolder(std::string folder, bool use_index, const IndexWriteOptions& writes)
    : impl_(std::make_unique<Impl>()) {
  impl_->folder = std::move(folder);
  impl_->use_index = use_index;
  impl_->writes = writes;
}

ResultsFolder::~ResultsFolder() { flush(); }

const std::string& ResultsFolder::folder() const { return impl_->folder; }

std::string ResultsFolder::index_path() const { return impl_->index_path(); }

IndexWritesOff::IndexWritesOff() { ++index_writes_off; }
IndexWritesOff::~IndexWritesOff() { --index_writes_off; }

void ResultsFolder::flush() noexcept {
  if (!impl_ || !impl_->use_index || !impl_->dirty || index_writes_off.load() > 0) return;
  try {
    if (impl_->append_to_journal()) return;
    write_index(impl_->index_path(), impl_->entries);
    impl_->dirty = impl_->whole = false;
    impl_->fresh.clear();
    if (impl_->journal_used || impl_->journal_over) {
      const auto& entries = impl_->entries;
      // Records are moved out of `journal` as they go into the index: none left, all were taken.
      const std::optional<std::size_t> all_taken_at = impl_->journal_loaded && impl_->journal.empty()
                                                          ? std::optional<std::size_t>(impl_->journal_bytes)
                                                          : std::nullopt;
      detail::empty_journal(impl_->folder, all_taken_at, [&](const std::string& name, const StatKey& key) {
        const auto it = entries.find(name);
        return it != entries.end() && it->second.key == key;
      });
      impl_->journal_used = impl_->journal_over = false;
    }
  } catch (...) {
    // A read-only run directory or a full disk: the index is only a cache, the next command
    // reads the files again.
  }
}

namespace {
// The index keeps entries of the files asked for only (a file that left the folder leaves it).
template <typename Map>
void prune_entries(Map& entries, const std::vector<std::string>& names, bool& dirty) {
  std::unordered_map<std::string, bool> asked;
  for (const auto& n : names) asked[n] = true;
  for (auto it = entries.begin(); it != entries.end();) {
    if (asked.count(it->first)) {
      ++it;
    } else {
      it = entries.erase(it);
      dirty = true;
    }
  }
}
}  // namespace

namespace {
// Forked copies for `files` reads: one, else from 64 files on one per CPU this process may use
// (at most `max`).
std::size_t copies_for(std::size_t files, std::size_t max) {
  if (files < 64 || max <= 1) return 1;
  cpu_set_t cpus;
  CPU_ZERO(&cpus);
  const std::size_t usable = ::sched_getaffinity(0, sizeof cpus, &cpus) == 0 ? CPU_COUNT(&cpus) : 1;
  return std::max<std::size_t>(1, std::min(max, usable));
}
}  // namespace

std::vector<JobFileRead> ResultsFolder::read(const std::vector<std::string>& names,
                                             const FolderReadOptions& opts, FolderReadStats* stats) {
  Impl& im = *impl_;
  im.load();
  const std::vector<std::string>* keys_wanted =
      opts.depth == Depth::Summary && !opts.summary_keys.empty() ? &opts.summary_keys : nullptr;
  FolderReadStats st;
  st.asked = names.size();
  st.index_rebuilt = im.rebuilt;
  std::vector<JobFileRead> out(names.size());
  std::vector<std::size_t> to_read;
  std::vector<std::optional<StatKey>> keys(names.size());
  for (std::size_t k = 0; k < names.size(); ++k) {
    JobFileRead& r = out[k];
    r.name = names[k];
    r.path = (fs::path(im.folder) / names[k]).string();
    int err = 0;
    keys[k] = stat_key(r.path, &err);
    if (!keys[k]) {
      r.missing = err == ENOENT;
      r.error = r.path + ": " + (r.missing ? "no such file" : base::errno_text(err));
      continue;
    }
    const bool final_file = !run::RunDir::is_partial_file(r.name);
    auto it = im.use_index && final_file ? im.entries.find(r.name) : im.entries.end();
    const bool hit = it != im.entries.end() && it->second.key == *keys[k];
    if (hit && it->second.verdict != Verdict::Ok) {
      r.damaged = it->second.verdict == Verdict::Damaged;
      r.error = r.path + ": " + it->second.reason;
      r.from_index = true;
      continue;
    }
    if (hit && opts.depth != Depth::Full) {
      try {
        r.data = detail::decode_job(it->second.record, opts.depth, keys_wanted);
        r.data.path = r.path;
        r.ok = r.from_index = true;
        continue;
      } catch (const std::exception&) {
        im.entries.erase(it);  // an entry that does not decode is read again from the file
        im.dirty = im.whole = true;
      }
    }
    // Not in the index (or stale there): the record its writer left in the journal, when it is
    // of the file as it is now; it goes into the index like a fresh read's.
    if (!hit && im.use_index && final_file && opts.depth != Depth::Full &&
        im.answer_from_journal(r, *keys[k], opts.depth, keys_wanted))
      continue;
    // Only a regular file goes to libhdf5 (issue 57): a FIFO in its place blocked the forked
    // copy's open until the guard's timeout, and a link is never a file gridrun-train wrote. A
    // refused file is damaged: named by readers, quarantined and redone by `run`. Checked from
    // lstat: each job file is opened once, by libhdf5.
    int open_err = 0;
    if (std::string why = base::check_before_open(r.path, base::kinds::kResultsFile, &open_err);
        !why.empty()) {
      r.missing = open_err == ENOENT;
      r.damaged = open_err == 0;
      r.error = std::move(why);
      continue;
    }
    to_read.push_back(k);
  }
  // Everything else in one forked copy (a few, one per CPU, when there are many files; a part of
  // checkpoint_every files at a time, each part's records then kept in the journal). A copy reads
  // whole files (tables too) whatever the depth asked, so that the verdict is the same for every
  // command, and sends at least Depth::Summary back (what the index keeps).
  const Depth sent = opts.whole_when_read ? Depth::Full : std::max(opts.depth, Depth::Summary);
  const std::size_t copies = copies_for(to_read.size(), opts.max_copies);
  const std::size_t part = opts.checkpoint_every > 0 ? opts.checkpoint_every : to_read.size();
  for (std::size_t first = 0; first < to_read.size(); first += part) {
    const std::size_t n = std::min(part, to_read.size() - first);
    const auto reads = base::run_isolated_each(
        n,
        [&](std::size_t i) {
          return detail::record_of_file(out[to_read[first + i]].path, sent);  // the isolated copy
        },
        opts.item_timeout_s, copies);
    for (std::size_t i = 0; i < n; ++i)
      im.take_read(out[to_read[first + i]], *keys[to_read[first + i]], reads[i], opts, sent, keys_wanted);
    st.read += n;
    if (n < to_read.size()) im.checkpoint();
  }
  if (opts.prune_index && im.use_index) prune_entries(im.entries, names, im.whole);
  im.dirty = im.dirty || im.whole;
  for (const auto& r : out) {
    st.from_index += r.from_index ? 1 : 0;
    st.failed += (!r.ok && !r.missing) ? 1 : 0;
  }
  if (stats) *stats = st;
  return out;
}

std::vector<JobFileRead> read_job_files(const std::string& folder, const std::vector<std::string>& names,
                                        const FolderReadOptions& opts, FolderReadStats* stats) {
  ResultsFolder f(folder, opts.use_index);
  auto out = f.read(names, opts, stats);
  f.flush();
  return out;
}

std::vector<std::string> list_job_files(const std::string& folder) {
  // One listing sorted by id once (a std::map filled in the folder's order cost a lookup of scattered
  // strings per file: 13x from 10,000 to 100,000 files, issue 60); of an id's final and .partial
  // file the final wins.
  std::vector<std::pair<std::string, std::string>> found;  // (id, name)
  if (auto names = base::list_folder(folder)) {
    found.reserve(names->size());
    for (std::string& name : *names)
      if (auto id = run::RunDir::job_id_of_results_file(name))
        found.emplace_back(std::move(*id), std::move(name));
  }
  std::sort(found.begin(), found.end(), [](const auto& a, const auto& b) {
    if (a.first != b.first) return a.first < b.first;
    return !run::RunDir::is_partial_file(a.second) && run::RunDir::is_partial_file(b.second);
  });
  std::vector<std::string> out;
  out.reserve(found.size());
  for (std::size_t i = 0; i < found.size(); ++i)
    if (i == 0 || found[i].first != found[i - 1].first) out.push_back(std::move(found[i].second));
  return out;
}

}  // namespace gridrun::results
