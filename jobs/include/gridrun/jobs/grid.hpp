// Grid files: YAML -> validated, expanded, deduplicated jobs with stable ids.
//
// Why validation is all-up-front: nothing may be written for a grid with any error, and every
// error must point at the file, line, column and key path that caused it (see docs/grid.md).
#pragma once

#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "gridrun/base/file_kinds.hpp"
#include "gridrun/jobs/job.hpp"

namespace gridrun::jobs {

// A bad grid. what() is "<file>:<line>:<col>: <key.path>: <message>"; callers exit with code 2.
class GridError : public std::invalid_argument {
 public:
  GridError(const std::string& file, int line, int col, const std::string& key_path,
            const std::string& message);
  const std::string& file() const { return file_; }
  int line() const { return line_; }
  int col() const { return col_; }
  const std::string& key_path() const { return key_path_; }
  const std::string& message() const { return message_; }

 private:
  std::string file_, key_path_, message_;
  int line_, col_;
};

struct Expansion {
  std::string name;                  // run name, [A-Za-z0-9_.-]+
  std::string source;                // the grid file's path
  std::vector<Job> jobs;             // grid order; index = position; ids unique
  std::vector<std::string> varying;  // parameter names whose value differs between jobs
  // A command grid's own parameters (params:), in the order declared. A streamed job's values
  // (LoadOptions::on_job) hold theirs after param_table()'s, in this order.
  std::vector<std::string> own_params;
  std::vector<std::string>
      warnings;            // "<file>:<line>:<col>: <key>: ..." (exclude matched nothing, duplicates)
  std::string compare_by;  // `compare: {by: KEY}`; empty when absent
  std::string compare_at;  // where compare.by is written, "FILE:LINE:COL" (for messages)
  // A warning when LoadOptions::overrides (`--set`) left the jobs one value of compare_by while the
  // grid without them has several (LoadOptions::warn_lost_compare); "" otherwise. Not one of
  // `warnings`, which are about the grid file: the commands print it to stderr, and
  // lost_compare_warning says the same of `--only`.
  std::string compare_gone;
  // `compare: {repeats: N, order: ...}` (or LoadOptions::repeats): every phase is measured N times,
  // each repeat a sitting of its own. The jobs of repeat r > 0 are copies of the first's with
  // params.repeat = r (own ids and result files, the same training), appended in blocks per
  // repeat whose phases come in the interleaved order (alternate: A B | B A | A B ...; random: a
  // shuffle per block seeded by the grid's name; blocked: A A .. B B .., no interleaving, the
  // order interleaving is measured against in bench/scheduler/bench_verdict.sh), so that "phases in order of
  // first appearance" (run::phase_order) is the interleaved order for `gridrun run` and `gridrun submit`
  // alike.
  int compare_repeats = 1;
  std::string compare_order = "alternate";
  std::size_t excluded = 0;    // product jobs dropped by exclude: entries
  std::size_t duplicates = 0;  // jobs dropped because an identical job came earlier
  std::size_t streamed = 0;    // jobs handed to LoadOptions::on_job instead of stored
};

struct LoadOptions {
  bool allow_empty = false;           // an empty expansion is an error unless set
  std::size_t max_jobs = 10'000'000;  // a larger product is an error (a typo, not an experiment)
  // When set, every job goes to on_job (values in param_table() order) instead of into
  // Expansion::jobs, which stays empty. Building one parameter map per job is most of the time and
  // memory of a 100,000-job expansion, which a caller that only prints the jobs does not need.
  // Errors are still thrown after some jobs went out: such a caller buffers until load_grid returns.
  std::function<void(std::size_t index, const std::string& id, const std::vector<Value>& values)> on_job;
  // Checks a job's HDF5 data file (dataset=hdf5, data_file already absolute) where the planner can
  // see it: "" when it is usable, else one line naming the file and what is wrong, reported at the
  // grid's data_file key. Called once per file and model. Set by the command (jobs/ reads no HDF5).
  std::function<std::string(const JobParams& job)> check_data_file;
  // Checks a model=torchscript job's model where the planner can see it (model_file absolute,
  // model_sha256 filled in): "" when it builds on the job's input, else one line saying why,
  // reported at the grid's model_file key. Called once per model content and input (model_sha256,
  // dataset, data_dir, data_file, input), for jobs that passed every other check and are not
  // excluded. Set by the command (scheduler::ModelChecker: gridrun-train --count-flops in a
  // memory-limited child; jobs/ links no LibTorch); unset, models are only hashed.
  std::function<std::string(const JobParams& job)> check_model_file;
  // Where relative model_file and data_file paths start; empty = the grid file's folder (the
  // current directory for a grid given as a string). A run's grid.yaml copy is loaded with the
  // folder of the grid it was copied from (run::RunState::grid_dir).
  std::string base_dir;
  // Command-line overrides (`--set KEY=VALUE[,VALUE...]`, from jobs::parse_overrides). A key with
  // one value: every job takes it after all of the grid's own values (defaults:, grid:, zip:,
  // include:, seeds:), then the derived batch fields, excludes, checks and its id follow, as if
  // the grid file set KEY to VALUE in every job (a grid axis over KEY collapses to duplicates,
  // which are dropped with a warning). A key given several values (several pairs with that key):
  // an axis of those values that replaces the grid's own variation of KEY (its grid: axis in
  // place, its zip: column, seeds:) or, when the grid does not vary KEY, comes after the grid's
  // axes and zip, before seeds; include: entries are crossed with it, its values over theirs
  // (docs/grid.md, "Lists on the command line"). A problem they cause is reported at the key path
  // "--set KEY".
  std::vector<std::pair<std::string, Value>> overrides;
  // Set by the commands that take `--set` (plan, run, simulate, calibrate, submit): when the
  // overrides leave a compare-by grid's jobs one value of its compare key and the grid without
  // them has several, Expansion::compare_gone says the comparison is gone (issue 58: `--set
  // ranks=1` on a grid that compares by ranks said only "2 duplicates dropped"). Telling needs the
  // grid expanded once more without the overrides, only in that case; status and report, which
  // re-expand a run's grid, leave it unset.
  bool warn_lost_compare = false;
  // `--repeats N` of run, submit, simulate and calibrate: replaces the grid's compare.repeats
  // (0: the grid's). Needs a compare: {by: KEY}.
  int repeats = 0;
};

// The most repeats of a compare-by grid (compare.repeats, --repeats).
inline constexpr int kMaxRepeats = 20;

// "FLAGS leaves one value of KEY, which this grid compares (compare: KEY, at FILE:L:C): the report
// will have no KEY comparison" for a compare-by expansion; FLAGS as given ("--set ranks=1").
std::string compare_gone_message(const Expansion& ex, const std::string& flags);

// Throws GridError on any problem (the first one found, in file order). `kind`: the rules the file
// is read with (base::open_checked): a person's grid file by default; a run's grid.yaml copy is
// base::kinds::kGridCopy (never through a link).
Expansion load_grid(const std::string& path, const LoadOptions& opts = {},
                    const base::FileKind& kind = base::kinds::kGridFile);
Expansion load_grid_string(const std::string& yaml, const std::string& display_name,
                           const LoadOptions& opts = {});

}  // namespace gridrun::jobs
