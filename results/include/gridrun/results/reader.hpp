// Reading per-job results files: used by `gridrun collect`/`report`, by tests, and by the scheduler
// to learn whether a job already finished (job_status).
//
// Why a dedicated reader: a job file may be finished (`<id>.h5`), being written right now by a
// SWMR writer, or left behind by a writer that was killed (`<id>.h5.partial` with the superblock's
// "open for writing" flags still set). read_job copes with all three without touching the
// original: plain open, else SWMR-read open, else a private copy with the flags cleared (what
// `h5clear -s` does). Tables are cut to the committed-rows counter so half-written rows of a
// crashed writer are never returned.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "gridrun/results/writer.hpp"

namespace gridrun::results {

// How much of a record the caller needs: Glance (id, status, exit reason, attempts: `status`),
// Summary (+ root attributes, parameters, /summary: text reports, `collect`, `run`), Full (+ the
// /steps, /epochs, /util and /profile tables: HTML and profile reports).
enum class Depth { Glance = 0, Summary = 1, Full = 2 };

// A root attribute or a parameter value (JSON booleans become `bool`).
using AttrValue = std::variant<std::int64_t, double, std::string>;
std::string to_string(const ParamValue& v);

// The parameters of a job as a file or the index records them: typed, or std::nullopt when the
// job has none (a job that failed before its parameters were read).
using RecordedParams = std::optional<jobs::JobParams>;
// One of them by name, for code that walks parameters by name (report columns, filters, legends):
// std::nullopt when there are none or `name` is not a parameter.
std::optional<ParamValue> param_value(const RecordedParams& p, const std::string& name);
// The same as text, "" when there is none (table cells, legends, group keys).
std::string param_text(const RecordedParams& p, const std::string& name);
// The parameter names, alphabetical, whose text is not the same for every one of `params` (the
// columns of a report, the words of a legend). A job without parameters differs from every job
// with them; none when no job has parameters.
// (model_sha256 is left out where model_file varies too: it is derived from the file.)
std::vector<std::string> varying_params(const std::vector<const RecordedParams*>& params);

// [rows x cols] row-major matrix (e.g. /steps/rank_step_s).
struct Matrix {
  std::size_t rows = 0, cols = 0;
  std::vector<double> data;
  double at(std::size_t r, std::size_t c) const { return data[r * cols + c]; }
};

// One of /steps, /epochs, /util: equal-length numeric columns (integers as doubles).
struct TableData {
  std::size_t rows = 0;  // committed rows
  std::map<std::string, std::vector<double>> columns;
  std::map<std::string, Matrix> matrices;
  const std::vector<double>* column(const std::string& name) const;
};

// One row of /attempts: one start of the runner on this file (the first, and each resume).
struct Attempt {
  std::string started_at, hostname, hostnames, batch_id;
  // The launcher's sitting that started it: `run-<start ms>-<pid>` for one `gridrun run`,
  // `submit-<n>` for a Slurm submission; "" for files written before sittings were recorded.
  std::string sitting;
  std::int64_t resumed_from_step = 0, restart_count = -1;
};

struct JobData {
  std::string path;
  bool partial = false;                    // file name ends in .partial
  std::map<std::string, AttrValue> attrs;  // root attributes
  RecordedParams params;                   // the `params` attribute, through jobs::
                                           //   job_params_from_json (older files: defaults)
  std::string id, run, status, exit_reason, start_time, end_time;
  int schema_version = 0;
  TableData steps, epochs, util;
  std::string gpu_absent_reason;   // /util attribute when no GPU columns
  Summary summary;                 // /summary (empty while running)
  std::vector<OpProfile> profile;  // /profile (operator table), if recorded
  std::vector<Attempt> attempts;   // /attempts, oldest first (files before it: empty)

  std::string attr_string(const std::string& name, const std::string& fallback = "") const;
  double attr_number(const std::string& name, double fallback) const;  // NaN-friendly
};

struct ReadOptions {
  bool tables = true;  // false: attributes and /summary only (fast)
  // Read the file once in a forked copy first (base::run_isolated) and trust it only if that copy
  // ended cleanly. libhdf5 1.10.8 can crash (SIGSEGV, abort in free()) on a file with a few
  // flipped bytes that passes H5Fis_hdf5 and H5Fopen; a crash then becomes this function's
  // "damaged" error instead of the end of `run`, `status`, `collect` or `report` (docs/results.md,
  // "Damaged files"). False only for files this process has just written itself.
  bool isolate = true;
  double isolate_timeout_s = 60;  // a read that hangs this long is damaged too
};

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

// Figures derived from a job's rows (see docs/results.md, "/summary"): step-time percentiles after
// `timing_warmup_steps`, throughput, comm shares, time/epochs to target, peak memory, utilization,
// power and energy. The writer stores these at finish(); entries of the Summary passed to
// finish() override or extend them.
Summary derive_summary(const JobData& job);

}  // namespace gridrun::results
