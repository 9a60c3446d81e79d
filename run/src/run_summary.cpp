// See run_summary.hpp: a cache of a run's listing row, current while its stamps hold.
#include "gridrun/run/run_summary.hpp"

#include <sys/stat.h>

#include <cerrno>
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

std::string run_stamps(const RunDir& dir) {
  // The root's entries, not its own stat: every `gridrun run` renames a new launch-token into it
  // and touches its lock, which change nothing a cache holds (a finished run started again must
  // keep its caches: issue 60); what else lands in the root (a new file, state.json renamed over)
  // changes an entry's stat or the entries' count.
  base::FolderStampOptions root;
  root.own = false;
  for (const std::string& p : {dir.launch_token_file(), dir.lock_file(), dir.cache_dir()})
    root.skip.push_back(std::filesystem::path(p).filename().string());
  std::string out = base::folder_entries_stamp(dir.root(), root);
  for (const std::string& p : {dir.jobs_dir(), dir.logs_dir(), dir.slurm_dir(), dir.slurm_ended_dir(),
                               dir.state_file(), dir.grid_copy(), dir.index_file()})
    out += ' ' + base::stat_stamp(p);
  // A results file changed in place (truncated, bits flipped and touched) renames nothing: each
  // file's own stat is in the stamp, so that such damage is named by the next listing.
  out += ' ' + base::folder_entries_stamp(dir.results_dir());
  // What computed the payload: a new gridrun (a fix in how a row or a status is derived) must not
  // keep showing what the old one cached for a run that did not change.
  out += " by " + base::stat_stamp(base::self_exe());
  return out;
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

// The cache folder, made when missing; `before` (the stamps the payload was computed under) is
// brought up to date for the new folder. False when the cache may not be written: the run changed
// while the payload was computed, or something else is in the folder's place (a link, a file).
bool ready_to_store(const RunDir& dir, std::string& before) {
  struct stat st {};
  if (::lstat(dir.cache_dir().c_str(), &st) != 0) {
    if (errno != ENOENT || ::mkdir(dir.cache_dir().c_str(), 0755) != 0) return false;
    // The new folder changed the root's stamp, and only that: take the root's again, keep the
    // rest as they were before the payload was computed.
    const std::string now = run_stamps(dir);
    if (now.substr(now.find(' ')) != before.substr(before.find(' '))) return false;
    before = now;
    return true;  // `now` is the check below, already made
  }
  if (!S_ISDIR(st.st_mode)) {
    return false;  // not ours to replace
  }
  return run_stamps(dir) == before;  // changed while computed: the payload may be stale
}

constexpr std::string_view kCacheMagic = "gridrun-cache 1\n";

std::string cache_file(const RunDir& dir, const std::string& name) { return dir.cache_dir() + "/" + name; }

}  // namespace

bool write_summary(const RunDir& dir, const base::Json& payload, const SummaryWriteOptions& opts) {
  if (opts.live) return false;
  try {
    std::string before = opts.stamps_before;
    if (!ready_to_store(dir, before)) return false;
    base::Json j = base::Json::object();
    j["version"] = kVersion;
    j["live"] = false;
    j["stamps"] = before;
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
    auto text = base::try_read_file(cache_file(dir, name), base::kinds::kRunCache, &refused);
    if (!text || text->compare(0, kCacheMagic.size(), kCacheMagic) != 0) return std::nullopt;
    const std::size_t eol = text->find('\n', kCacheMagic.size());
    if (eol == std::string::npos) return std::nullopt;
    if (std::string_view(*text).substr(kCacheMagic.size(), eol - kCacheMagic.size()) != run_stamps(dir))
      return std::nullopt;
    return text->substr(eol + 1);
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

bool write_cache(const RunDir& dir, const std::string& name, std::string_view payload,
                 const SummaryWriteOptions& opts) {
  if (opts.live) return false;
  try {
    std::string before = opts.stamps_before;
    if (!ready_to_store(dir, before)) return false;
    std::string bytes(kCacheMagic);
    bytes += before;
    bytes += '\n';
    bytes += payload;
    base::replace_file(cache_file(dir, name), bytes);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

}  // namespace gridrun::run
