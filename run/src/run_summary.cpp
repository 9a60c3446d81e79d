// See run_summary.hpp: a cache of a run's listing row, current while its stamps hold.
#include "gridrun/run/run_summary.hpp"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <exception>
#include <filesystem>
#include <string_view>

#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/host.hpp"

namespace gridrun::run {

namespace {
constexpr int kVersion = 1;
}

RunStampParts run_stamp_parts(const RunDir& dir) {
  RunStampParts out;
  // The root's entries, not its own stat: every `gridrun run` renames a new launch-token into it
  // and touches its lock, which change nothing a cache holds (a finished run started again must
  // keep its caches: issue 60); what else lands in the root (a new file, state.json renamed over)
  // changes an entry's stat or the entries' count.
  base::FolderStampOptions root;
  root.own = false;
  // results/ itself neither: a rename into it changes its mtime; its entries are stamped below.
  // results.h5 neither: its own stamp is `index` (what `gridrun run` rewrites: same_but_index).
  for (const std::string& p :
       {dir.launch_token_file(), dir.lock_file(), dir.cache_dir(), dir.results_dir(), dir.index_file()})
    root.skip.push_back(std::filesystem::path(p).filename().string());
  out.rest = base::folder_entries_stamp(dir.root(), root);
  for (const std::string& p : {dir.jobs_dir(), dir.logs_dir(), dir.slurm_dir(), dir.slurm_ended_dir(),
                               dir.state_file(), dir.grid_copy()})
    out.rest += ' ' + base::stat_stamp(p);
  out.index = base::stat_stamp(dir.index_file());
  // What computed the payload: a new gridrun (a fix in how a row or a status is derived) must not
  // keep showing what the old one cached for a run that did not change.
  out.rest += " by " + base::stat_stamp(base::self_exe());
  // A results file changed in place (truncated, bits flipped and touched) renames nothing: each
  // file's own stat is in the stamp, so that such damage is named by the next listing. The
  // folder's own stat and its caches of the job files (the index and journal every reader may
  // rewrite or append to) are left out: a `status` that brought the index up to date must not
  // make its own answer stale (it did: after a change, two statuses computed the whole merge).
  base::FolderStampOptions results;
  results.own = false;
  results.skip = {RunDir::kResultsIndexName, RunDir::kResultsJournalName};
  int err = 0;
  if (auto entries = base::folder_entry_stamps(dir.results_dir(), results, &err)) {
    out.results = std::move(*entries);
    out.results_stamp = "results:" + base::entries_digest(out.results);
  } else {
    out.results_stamp = "results-unlisted:" + std::to_string(err);
  }
  return out;
}

std::string run_stamps(const RunDir& dir) { return run_stamp_parts(dir).text(); }

bool same_but_index(const RunStampParts& earlier, const RunStampParts& later) {
  return earlier.rest == later.rest && earlier.results_stamp == later.results_stamp;
}

std::optional<base::Json> read_current_summary(const RunDir& dir) {
  try {
    std::string refused;
    const auto text = base::try_read_file(dir.summary_file(), base::kinds::kRunSummary, &refused);
    if (!text) return std::nullopt;
    const base::Json j = base::parse_json(*text, dir.summary_file());
    if (!j.is_object() || base::get_int(j, "version", -1) != kVersion || base::get_bool(j, "live", true))
      return std::nullopt;
    if (base::get_string(j, "stamps") != run_stamps(dir) || !j.contains("payload")) return std::nullopt;
    return j.at("payload");
  } catch (const std::exception&) {
    return std::nullopt;  // damaged: recomputed, and replaced by the next write
  }
}

namespace {

// The cache folder, made when missing, and the stamps now when the payload computed under
// `before` may be stored: std::nullopt when the run changed while it was computed, or something
// else is in the folder's place (a link, a file).
std::optional<RunStampParts> ready_to_store(const RunDir& dir, const std::string& before) {
  struct stat st {};
  const bool made = ::lstat(dir.cache_dir().c_str(), &st) != 0;
  if (made && (errno != ENOENT || ::mkdir(dir.cache_dir().c_str(), 0755) != 0)) return std::nullopt;
  if (!made && !S_ISDIR(st.st_mode)) return std::nullopt;  // not ours to replace
  RunStampParts now = run_stamp_parts(dir);
  const std::string text = now.text();
  // A new folder changed the root's stamp (the first word), and only that: the rest must be as
  // it was before the payload was computed.
  const bool same = made ? text.substr(text.find(' ')) == before.substr(before.find(' ')) : text == before;
  if (!same) return std::nullopt;  // changed while computed: the payload may be stale
  return now;
}

// RUN_DIR/.cache/NAME: the magic, the stamps line, "entries N" and N entries of the results
// folder (name, NUL, its 8-byte hash) or "entries -", then the payload.
constexpr std::string_view kCacheMagic = "gridrun-cache 2\n";

std::string cache_file(const RunDir& dir, const std::string& name) { return dir.cache_dir() + "/" + name; }

void sort_by_name(std::vector<base::EntryStamp>& v) {
  std::sort(v.begin(), v.end(),
            [](const base::EntryStamp& a, const base::EntryStamp& b) { return a.name < b.name; });
}

struct CacheFile {
  std::string_view stamps;
  std::optional<std::vector<base::EntryStamp>> entries;  // when kept and asked for
  std::string_view payload;
};

// Throws std::runtime_error on a file that is not whole.
CacheFile parse_cache(std::string_view text, bool with_entries) {
  auto line = [&text](std::size_t& at) {
    const std::size_t eol = text.find('\n', at);
    if (eol == std::string_view::npos) throw std::runtime_error("torn");
    const std::string_view l = text.substr(at, eol - at);
    at = eol + 1;
    return l;
  };
  if (text.substr(0, kCacheMagic.size()) != kCacheMagic) throw std::runtime_error("not a cache");
  std::size_t at = kCacheMagic.size();
  CacheFile f;
  f.stamps = line(at);
  const std::string_view head = line(at);
  if (head.substr(0, 8) != "entries ") throw std::runtime_error("no entries line");
  if (head != "entries -") {
    const std::size_t n = std::stoull(std::string(head.substr(8)));
    std::vector<base::EntryStamp> entries;
    if (with_entries) entries.reserve(n);
    for (std::size_t k = 0; k < n; ++k) {
      const std::size_t nul = text.find('\0', at);
      if (nul == std::string_view::npos || nul + 9 > text.size()) throw std::runtime_error("torn entries");
      base::EntryStamp e;
      std::memcpy(&e.hash, text.data() + nul + 1, 8);
      if (with_entries) {
        e.name = std::string(text.substr(at, nul - at));
        entries.push_back(std::move(e));
      }
      at = nul + 9;
    }
    if (with_entries) f.entries = std::move(entries);
  }
  f.payload = text.substr(at);
  return f;
}

}  // namespace

bool write_summary(const RunDir& dir, const base::Json& payload, const SummaryWriteOptions& opts) {
  if (opts.live) return false;
  try {
    const auto now = ready_to_store(dir, opts.stamps_before);
    if (!now) return false;
    base::Json j = base::Json::object();
    j["version"] = kVersion;
    j["live"] = false;
    j["stamps"] = now->text();
    j["payload"] = payload;
    base::replace_file(dir.summary_file(), j.dump(1) + "\n");
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

std::optional<std::string> read_current_cache(const RunDir& dir, const std::string& name) {
  try {
    std::string refused;
    const auto text = base::try_read_file(cache_file(dir, name), base::kinds::kRunCache, &refused);
    if (!text) return std::nullopt;
    const CacheFile f = parse_cache(*text, false);
    if (f.stamps != run_stamps(dir)) return std::nullopt;
    return std::string(f.payload);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

std::optional<CacheChanges> read_cache_changes(const RunDir& dir, const std::string& name) {
  try {
    std::string refused;
    const auto text = base::try_read_file(cache_file(dir, name), base::kinds::kRunCache, &refused);
    if (!text) return std::nullopt;
    RunStampParts now = run_stamp_parts(dir);
    CacheChanges out;
    out.stamps_now = now.text();
    // The entries are parsed (100,000 names) only when the stamps say something changed.
    const CacheFile f = parse_cache(*text, parse_cache(*text, false).stamps != out.stamps_now);
    if (f.stamps != out.stamps_now) {
      sort_by_name(now.results);
      // Only results files changed, each under its name: the rest of the stamps as stored, the
      // same names listed.
      const std::size_t cut = f.stamps.rfind(' ');
      if (!f.entries || cut == std::string_view::npos || f.stamps.substr(0, cut) != now.head() ||
          f.entries->size() != now.results.size())
        return std::nullopt;
      for (std::size_t k = 0; k < now.results.size(); ++k) {
        const base::EntryStamp &was = (*f.entries)[k], &is = now.results[k];
        if (was.name != is.name) return std::nullopt;
        if (was.hash != is.hash) out.changed.push_back(is.name);
      }
      if (out.changed.empty()) return std::nullopt;  // a digest of the same entries cannot differ
    }
    out.payload = std::string(f.payload);
    return out;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

bool write_cache(const RunDir& dir, const std::string& name, std::string_view payload,
                 const SummaryWriteOptions& opts) {
  if (opts.live) return false;
  try {
    const auto now = ready_to_store(dir, opts.stamps_before);
    if (!now) return false;
    std::string bytes(kCacheMagic);
    bytes += now->text();
    bytes += '\n';
    if (opts.keep_results_entries) {
      std::vector<base::EntryStamp> entries = now->results;
      sort_by_name(entries);
      bytes += "entries " + std::to_string(entries.size()) + "\n";
      for (const base::EntryStamp& e : entries) {
        bytes += e.name;
        bytes += '\0';
        bytes.append(reinterpret_cast<const char*>(&e.hash), 8);
      }
    } else {
      bytes += "entries -\n";
    }
    bytes += payload;
    base::replace_file(cache_file(dir, name), bytes);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace gridrun::run
