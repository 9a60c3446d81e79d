// The vocabulary of the per-job results file, shared by the writer (writer.hpp), the readers
// (reader.hpp, run_reader.hpp, run_index.hpp) and the byte form of a record (src/job_codec.hpp):
// the row types, the status words, the summary, the attempts, what a read returns (JobData) and
// how deep it reads (Depth, ReadOptions). Definitions in format.cpp.
//
// Why a header of its own: with these types in writer.hpp the readers included the writer, and
// the writer (which reads its own file back at finish) included the reader, an include each way
// inside results/ (tests/arch/check_layers.py refuses such cycles). The schema: docs/results.md.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#include "gridrun/base/flat_map.hpp"
#include "gridrun/hw/util_sample.hpp"
#include "gridrun/jobs/params.hpp"

namespace gridrun::results {

inline constexpr int kSchemaVersion = 1;

// A parameter value by name (jobs::get_param), e.g. for report columns.
using ParamValue = jobs::Value;

struct StepRow {
  std::int64_t step = 0, epoch = 0;
  double wall_s = 0, loss = 0, samples_per_s = 0, step_s = 0, data_s = 0, forward_s = 0, backward_s = 0,
         optimizer_s = 0, comm_s = 0, exposed_comm_s = 0;
  std::vector<double> rank_step_s;  // size == ranks
};

struct EpochRow {
  std::int64_t epoch = 0;
  double train_loss = 0, train_acc = 0, test_loss = 0, test_acc = 0, epoch_s = 0, wall_s = 0;
};

// A row of /util is one sample of the hardware (hw/util_sampler.hpp takes them).
using UtilRow = hw::UtilSample;

// Final figures; names become fields of the one-row /summary datasets.
// A flat map (base/flat_map.hpp): a run holds one per job, twice (issue 60).
using Summary = base::FlatMap<std::string, double>;

// One operator of the profiler's table (`/profile`, written at finish when set): times summed over
// the profiled steps, in microseconds; device times are 0 for CPU jobs.
struct OpProfile {
  std::string name;  // e.g. "aten::addmm"
  std::int64_t calls = 0;
  double self_cpu_us = 0, total_cpu_us = 0, self_device_us = 0, total_device_us = 0;
};

enum class Status { Running, Completed, Failed, Interrupted, TargetReached, Diverged };
std::string to_string(
    Status s);  // "running", "completed", "failed", "interrupted", "target_reached", "diverged"

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
// The job's device, typed (never its text compared: base/device.hpp); std::nullopt when there are
// no parameters.
inline std::optional<jobs::Device> device_of(const RecordedParams& p) {
  return p ? std::optional<jobs::Device>(p->device) : std::nullopt;
}
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
  bool partial = false;                         // file name ends in .partial
  base::FlatMap<std::string, AttrValue> attrs;  // root attributes (a flat map: one per job)
  RecordedParams params;                        // the `params` attribute, through jobs::
                                                //   job_params_from_json (older files: defaults)
  std::string id, run, status, exit_reason, start_time, end_time;
  int schema_version = 0;
  TableData steps, epochs, util;
  std::string gpu_absent_reason;   // /util attribute when no GPU columns
  Summary summary;                 // /summary (empty while running)
  std::vector<OpProfile> profile;  // /profile (operator table), if recorded
  std::vector<Attempt> attempts;   // /attempts, oldest first (files before it: empty)
  Depth depth = Depth::Full;       // how much of the file this holds (a record decoded shallower)

  std::string attr_string(const std::string& name, const std::string& fallback = "") const;
  double attr_number(const std::string& name, double fallback) const;  // NaN-friendly
};

// How long one job file's read may take before the file counts as damaged (a read that hangs on a
// damaged file): ReadOptions::isolate_timeout_s and RunReaderOptions' item_timeout_s both start here.
inline constexpr double kReadGuardS = 60;

struct ReadOptions {
  bool tables = true;  // false: attributes and /summary only (fast)
  // Read the file once in a forked copy first (base::run_isolated) and trust it only if that copy
  // ended cleanly. libhdf5 1.10.8 can crash (SIGSEGV, abort in free()) on a file with a few
  // flipped bytes that passes H5Fis_hdf5 and H5Fopen; a crash then becomes read_job's
  // "damaged" error instead of the end of `run`, `status`, `collect` or `report` (docs/results.md,
  // "Damaged files"). False only for files this process has just written itself.
  bool isolate = true;
  double isolate_timeout_s = kReadGuardS;  // a read that hangs this long is damaged too
};

}  // namespace gridrun::results
