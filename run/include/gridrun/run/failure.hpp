// Why a job failed, in one line: for the `gridrun run` event line, `gridrun status` and the report's
// job table (docs/scheduler.md, "Failure reasons").
//
// Why here (run/): the reason is read from the run directory (the results file's exit_reason, else
// the job's stderr log), and the scheduler, the Slurm status and the reports all show it the same
// way. The runner's own message is what the user needs; Open MPI's banners around it in the log
// are not, so the log is searched for the runner's line rather than shown.
#pragma once

#include <string>
#include <string_view>

#include "gridrun/run/run_dir.hpp"

namespace gridrun::run {

// The reason in a job's stderr log (logs/<id>.err; `text` may be its tail): the last line of the
// last attempt (after the last "=== gridrun attempt" header) that gridrun-train or gridrun itself
// wrote ("gridrun-train: ...", "gridrun: watchdog: ..."), warnings ("gridrun-train: warning: ...")
// left out, without the program prefix (repeated ones too) and as one printable line; "" when
// there is none.
std::string reason_from_log(std::string_view text);

// A failed job's one-line reason: `exit_reason` (its results file's) when it is not empty, else
// reason_from_log of the last 64 KiB of dir.log_err(id), else "no reason recorded; see LOG".
std::string failure_reason(const RunDir& dir, const std::string& id, const std::string& exit_reason);

// The same without the fallback: "" when neither the results file nor the log names a reason
// (the event line of `gridrun run` names the log anyway).
std::string recorded_failure_reason(const RunDir& dir, const std::string& id, const std::string& exit_reason);

}  // namespace gridrun::run
