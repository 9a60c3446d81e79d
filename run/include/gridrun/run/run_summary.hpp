// RUN_DIR/.cache/summary.json: a small summary of a run (what `gridrun ls` shows of it: counts
// by state, the verdict line, the last change) kept beside the stamps of what it was computed
// from, so that listing a run of 100,000 jobs reads one small file instead of the whole run
// (issue 60: `ls` took 26 s at 100,000 jobs, its answer one row).
//
// Why stamps and not "every writer updates it": the run changes through many writers (the run
// loop, Slurm task bodies on other hosts, gridrun-train, quarantine), and one that forgot would
// leave a summary that lies. Every one of those changes renames a file into the run's root,
// jobs/, results/ or logs/ (state.json, a job file, a results file), which changes that folder's
// stamp (base::stat_stamp); a results file changed in place (damage) changes its own, which the
// stamp of results/ includes. So a summary is current when the stamps it recorded, taken before it
// was computed, still hold; otherwise the reader recomputes it. A summary that recorded a live
// run (a job running or queued) is never current: a live job changes without a rename.
//
// The payload is the caller's (app/cmd_ls.cpp's row in summary.json; app/cmd_status.cpp's
// RunStatus in .cache/status through read_current_cache/write_cache); this file owns only the
// stamps and the files' rules (read through base::try_read_file's checks, written atomically).
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "gridrun/base/fs.hpp"
#include "gridrun/base/json.hpp"
#include "gridrun/run/run_dir.hpp"

namespace gridrun::run {

// The stamps a summary depends on: the run's root and its jobs/, logs/, slurm/ and slurm/ended/
// folders, state.json, grid.yaml, results.h5, and results/ with each of its files, one line.
std::string run_stamps(const RunDir& dir);
// The same stamps with the results folder's entries one by one (by name), for a cache that can
// bring itself up to date when only some results files changed (app/cmd_status.cpp).
struct RunStampParts {
  std::string rest;                       // every stamp but results.h5's and the results folder's
  std::string index;                      // results.h5's (no space in it)
  std::vector<base::EntryStamp> results;  // the results folder's entries, as listed (none when it cannot be)
  std::string results_stamp;              // their digest (no space in it)
  std::string head() const { return rest + ' ' + index; }            // all but the results folder
  std::string text() const { return head() + ' ' + results_stamp; }  // run_stamps
};
RunStampParts run_stamp_parts(const RunDir& dir);
// Whether `later` differs from `earlier` in results.h5's stamp at most: what `gridrun run` checks
// when it rewrote results.h5 from the job files it read, before caching its report of the same read.
bool same_but_index(const RunStampParts& earlier, const RunStampParts& later);

// The payload of the summary when it is current: present, whole, of this version, its stamps
// equal to run_stamps(dir) now, and not marked live. std::nullopt otherwise (never throws).
std::optional<base::Json> read_current_summary(const RunDir& dir);

struct SummaryWriteOptions {
  std::string stamps_before;  // run_stamps(dir) taken before the payload was computed
  bool live = false;          // a job ran or was queued: never reused
  // write_cache: keep the results folder's entries one by one, for read_cache_changes.
  bool keep_results_entries = false;
};
// Stores `payload` when the run did not change while it was computed (run_stamps(dir) still
// equals opts.stamps_before) and is not live. Creates .cache/ when missing (which changes the
// root's stamp: the stamps are then taken again, and the payload is stored only when nothing else
// changed). Best effort: returns false, writing nothing, on any failure (a read-only run, a full
// disk): a summary is a cache.
bool write_summary(const RunDir& dir, const base::Json& payload, const SummaryWriteOptions& opts);

// The same rules for a binary cache of any command, RUN_DIR/.cache/NAME ("gridrun-cache 2", the
// stamps, the results folder's entries when kept, then the payload): the payload when current, else
// std::nullopt (never throws); stored only when the run did not change while it was computed and is not live.
std::optional<std::string> read_current_cache(const RunDir& dir, const std::string& name);
bool write_cache(const RunDir& dir, const std::string& name, std::string_view payload,
                 const SummaryWriteOptions& opts);
// A cache stored with keep_results_entries whose run changed in its results files only (each
// still there under its name: rewritten, renamed over, changed in place): its payload and those
// files, so that the caller brings it up to date by reading them alone (a status after 10 of
// 100,000 files changed). Also a current cache (`changed` empty). std::nullopt otherwise: none,
// damaged, anything else changed (a file added or removed, state.json, the grid, the binary).
struct CacheChanges {
  std::string payload;
  std::vector<std::string> changed;  // names in results/, sorted
  std::string stamps_now;            // run_stamps(dir) as read: the stamps_before of an update
};
std::optional<CacheChanges> read_cache_changes(const RunDir& dir, const std::string& name);

}  // namespace gridrun::run
