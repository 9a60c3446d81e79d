// See run_summary.hpp: a cache of a run's listing row, current while its stamps hold.
#include "gridrun/run/run_summary.hpp"

#include <sys/stat.h>

#include <cerrno>
#include <exception>

#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/fs.hpp"

namespace gridrun::run {

namespace {
constexpr int kVersion = 1;
}

std::string run_stamps(const RunDir& dir) {
  std::string out = base::stat_stamp(dir.root());
  for (const std::string& p : {dir.jobs_dir(), dir.logs_dir(), dir.slurm_dir(), dir.slurm_ended_dir(),
                               dir.state_file(), dir.grid_copy(), dir.index_file()})
    out += ' ' + base::stat_stamp(p);
  // A results file changed in place (truncated, bits flipped and touched) renames nothing: each
  // file's own stat is in the stamp, so that such damage is named by the next listing.
  out += ' ' + base::folder_entries_stamp(dir.results_dir());
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

bool write_summary(const RunDir& dir, const base::Json& payload, const SummaryWriteOptions& opts) {
  if (opts.live) return false;
  try {
    std::string before = opts.stamps_before;
    struct stat st {};
    if (::lstat(dir.cache_dir().c_str(), &st) != 0) {
      if (errno != ENOENT || ::mkdir(dir.cache_dir().c_str(), 0755) != 0) return false;
      // The new folder changed the root's stamp, and only that: take the root's again, keep
      // the rest as they were before the payload was computed.
      const std::string root_then = before.substr(0, before.find(' '));
      const std::string now = run_stamps(dir);
      if (now.substr(now.find(' ')) != before.substr(before.find(' ')) || root_then == "absent") return false;
      before = now;
    } else if (!S_ISDIR(st.st_mode)) {
      return false;  // something else in its place (a link, a file): not ours to replace
    }
    if (run_stamps(dir) != before) return false;  // changed while computed: the payload may be stale
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

}  // namespace gridrun::run
