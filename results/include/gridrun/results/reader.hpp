// Reading per-job results files: used by `gridrun collect`/`report`, by tests, and by the scheduler
// to learn whether a job already finished (job_status).
//
// Why a dedicated reader: a job file may be finished (`<id>.h5`), being written right now by a
// SWMR writer, or left behind by a writer that was killed (`<id>.h5.partial` with the superblock's
// "open for writing" flags still set). read_job copes with all three without touching the
// original: plain open, else SWMR-read open, else a private copy with the flags cleared (what
// `h5clear -s` does). Tables are cut to the committed-rows counter so half-written rows of a
// crashed writer are never returned.
// The format's types (JobData, Depth, ReadOptions, ...) are format.hpp, derive_summary is
// summary.hpp; both come with this header. read_job reads through the run reader (run_reader.hpp:
// the one guarded read), which knows nothing of this header.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "gridrun/results/format.hpp"
#include "gridrun/results/summary.hpp"

namespace gridrun::results {

// Reads a job file (.h5 or .h5.partial, live or left by a dead writer). Throws std::runtime_error
// naming the path when it is missing, not HDF5, not a gridrun job file, or when reading it crashed
// or hung the isolated copy (see ReadOptions::isolate).
JobData read_job(const std::string& path, const ReadOptions& opts = {});

// The `status` attribute of a job file ("running", "completed", "failed", "interrupted",
// "target_reached"), or "" when the file is missing or unreadable. Never throws.
std::string job_status(const std::string& path);
// The same, with the file's attempts (for `gridrun status`): one guarded read. Never throws.
struct JobGlance {
  std::string status;
  std::vector<Attempt> attempts;
};
JobGlance job_glance(const std::string& path);

}  // namespace gridrun::results
