// A running job's progress file, logs/<id>.out.heartbeat (RunDir::heartbeat_file): one JSON line
// that rank 0 of gridrun-train rewrites at most once a second from its training loop.
//
// Why a file of its own: the job's results file is flushed at epoch ends and every 30 s (SWMR
// flushes cost), so `gridrun status` read from it alone lagged (an ETA of "9s" while the log said
// step 110 of 128, issue 49). This file is the live step, epoch and wall time; its mtime is also
// the liveness the watchdog of `gridrun run` checks (a hung loop stops writing it). It stays after
// an interrupted attempt (the next attempt removes it), so status shows where that attempt ended.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace gridrun::run {

struct Progress {
  std::int64_t step = 0;         // global steps done (the last /steps row's step once flushed)
  std::int64_t total_steps = 0;  // planned steps of the whole job; 0 unknown
  std::int64_t epoch = 0;        // the epoch this step belongs to, from 1 (as /steps rows)
  std::int64_t epochs = 0;       // planned epochs; 0 unknown
  double wall_s = 0;             // the job's wall time at this step (as /steps wall_s)
  double unix_s = 0;             // when it was written
};

// One line: {"step":..,"total_steps":..,"epoch":..,"epochs":..,"wall_s":..,"unix_s":..}\n
std::string progress_line(const Progress& p);
// The file's progress, or nullopt when it is missing, torn or not one (an older gridrun-train's
// bare step number gives the step alone). Never throws.
std::optional<Progress> read_progress(const std::string& path);

}  // namespace gridrun::run
