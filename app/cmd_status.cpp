// `gridrun status` and `gridrun cancel`, of a local run or a Slurm one: flag parsing and printing
// only; the work is in gridrun::scheduler (scheduler/status.hpp, scheduler/cancel.hpp; Slurm's
// overlay on status comes from gridrun::slurm).
//
// Each command fills one options struct from Boost.Program_options and validates it right away, so
// a bad flag exits 2 with its name before anything is read or signalled.
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <chrono>
#include <filesystem>
#include <iostream>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "cli.hpp"
#include "commands.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/jobs/select.hpp"
#include "gridrun/run/run_dir.hpp"
#include "gridrun/run/run_summary.hpp"
#include "gridrun/slurm/submit.hpp"
#include "gridrun/status/cancel.hpp"
#include "gridrun/status/status.hpp"
#include "settled_status.hpp"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace gridrun::app {
namespace {

// RUN_DIR/.cache/status: the last settled status of the whole run (run/run_summary.hpp rules).
constexpr const char* kStatusCache = "status";

struct StatusCli {
  std::string run_dir;
  std::string format = "table";
  int width = 0;       // 0: the terminal's (table_width)
  bool watch = false;  // print again every interval_s until the run is over
  double interval_s = 2;
  std::vector<std::string> only;    // --only selectors (cli.hpp: the same as report and export)
  std::vector<std::string> states;  // --state STATE[,STATE...]: --only status=... by outcome name
  int limit = 0;                    // --limit N: job rows shown at most (0: all)
  bool help = false;
};

struct CancelCli {
  std::string run_dir;
  double timeout_s = status::LocalCancelOptions{}.timeout_s;  // --timeout, or its older name --wait
  bool help = false;
};

// The end of `gridrun status --watch`: a local run when no `gridrun run` holds it any more (its
// jobs may stay pending: it was interrupted), a Slurm run when Slurm holds none of its jobs.
// `held`: whether a gridrun held the run's lock before `st` was read.
bool run_over(bool held, const status::RunStatus& st) {
  if (held) return false;
  return std::none_of(st.jobs.begin(), st.jobs.end(), [](const status::JobStatusRow& r) {
    return !r.slurm_id.empty() && run::is_queued(r.state);
  });
}

// status --only: the rows of the matching jobs, counted again. A parameter key is answered from the
// job's parameters as the run resolved them (RunStatus::job_params), id and status from the row
// (status: the outcome status shows, "completed", "running", ...).
void keep_only(status::RunStatus& st, const std::vector<jobs::Selector>& only) {
  if (only.empty()) return;
  // A key that is no parameter of gridrun's must be one of the run's own (params:), as for run --only.
  if (!st.job_params.empty())
    for (const auto& s : only)
      if (const std::string bad = jobs::undeclared(s, st.job_params.front(), "--only"); !bad.empty())
        throw std::invalid_argument(bad);
  std::vector<status::JobStatusRow> rows;
  std::vector<jobs::JobParams> params;
  for (std::size_t i = 0; i < st.jobs.size(); ++i) {
    const status::JobStatusRow& row = st.jobs[i];
    const bool known = i < st.job_params.size();
    auto matches = [&](const jobs::Selector& s) {
      if (s.key == "id") return s.matches(row.id);
      if (s.key == "status") return s.matches(run::to_string(row.state));
      return known && s.matches(st.job_params[i]);
    };
    if (!std::all_of(only.begin(), only.end(), matches)) continue;
    rows.push_back(row);
    if (known) params.push_back(st.job_params[i]);
  }
  st.jobs = std::move(rows);
  st.job_params = std::move(params);
  st.counts.clear();
  for (const auto& row : st.jobs) st.counts[row.state] += 1;
}

// status --limit: the first `limit` rows (0: all), with a note of the rest; the counts stay.
void limit_rows(status::RunStatus& st, std::size_t limit) {
  if (limit == 0 || st.jobs.size() <= limit) return;
  st.notes.push_back(std::to_string(limit) + " of " + std::to_string(st.jobs.size()) +
                     " jobs shown (--limit; --limit 0 shows all, --state and --only choose which)");
  st.jobs.resize(limit);
  if (st.job_params.size() > limit) st.job_params.resize(limit);
}

// One status as text: what --watch redraws.
std::string status_text(const status::RunStatus& st, status::StatusFormat fmt, int width) {
  std::ostringstream os;
  status::print_status(st, fmt, os, width);
  return os.str();
}

// status and cancel: RUN_DIR is their one positional argument and required. False: help printed.
bool parse_run_dir(const Args& args, const po::options_description& desc, const char* cmd, const bool& help,
                   std::string& run_dir, const HelpText& text) {
  const Positional pos{"run-dir", "RUN_DIR", "the run directory (`gridrun run/submit --out OUT`: OUT/NAME)",
                       1, po::value(&run_dir)};
  if (!parse_command(args, desc, {pos}, cmd, help, text, std::cout)) return false;
  if (run_dir.empty()) throw std::invalid_argument("RUN_DIR: missing run directory (see --help)");
  check_run_path(run_dir, cmd, false);  // a grid file, a folder of runs: the command meant (issue 58)
  return true;
}

}  // namespace

// The status of the whole run: from the run's status cache while no file of it changed (a settled
// run: finished, failed or pending, no Slurm job), else merged afresh and cached when settled.
// A run of 100,000 finished jobs: one read of the cache instead of state.json, the grid's
// expansion and the results index (issue 60); where only some results files changed since, the
// cache brought up to date from those files alone (status::patch_status).
status::RunStatus settled_status(const std::string& run_dir, const slurm::SlurmCli& cli) {
  const run::RunDir rd(run_dir);
  run::SummaryWriteOptions w;
  w.keep_results_entries = true;
  if (auto cache = run::read_cache_changes(rd, kStatusCache)) {
    try {
      status::RunStatus st = status::decode_status(cache->payload);
      st.run_dir = run_dir;
      if (cache->changed.empty()) return st;
      if (status::patch_status(st, rd, cache->changed)) {
        w.stamps_before = cache->stamps_now;
        w.live = !status::status_is_settled(st);
        run::write_cache(rd, kStatusCache, status::encode_status(st), w);
        return st;
      }
    } catch (const std::exception&) {
      // Damaged: computed again below, and replaced.
    }
  }
  w.stamps_before = run::run_stamps(rd);
  status::RunStatus st = slurm::run_status(run_dir, &cli);
  w.live = !status::status_is_settled(st);
  run::write_cache(rd, kStatusCache, status::encode_status(st), w);
  return st;
}

int cmd_status(const Args& args) {
  StatusCli c;
  po::options_description desc = command_options(c.help);
  add_table_flags(desc, c.format, c.width, "table | json | csv");
  // --watch is a plain switch: with an optional value it took a following RUN_DIR for its interval.
  desc.add_options()("watch", po::bool_switch(&c.watch),
                     "print again every --interval seconds (redrawn in place on a terminal) until no "
                     "gridrun runs the run any more (Slurm: none of its jobs is queued or running)")(
      "interval", po::value<double>(&c.interval_s)->default_value(2.0, "2"),
      "SECONDS between two prints of --watch (> 0)");
  add_only_flag(desc, c.only);
  desc.add_options()(
      "state", po::value(&c.states)->composing(),
      "STATE[,STATE...]: only the jobs in these states (pending, running, completed, failed, "
      "interrupted, target_reached, submitted), counted; answered from the run's status cache")(
      "limit", po::value(&c.limit)->default_value(c.limit),
      "N: at most N job rows, the first by id (the counts stay those of every shown state; 0: all)");
  const HelpText help{"gridrun status RUN_DIR [options]",
                      "Counts and a per-job table of a run: Slurm's view (squeue, scontrol show job, sacct\n"
                      "when accounting answers) merged with state.json and the results files on disk.\n"
                      "Works for local runs too (state.json and results files only). Jobs show the\n"
                      "parameters that differ between them (as `gridrun plan`); a running job its step and\n"
                      "epoch (from its live results file), elapsed time and an ETA: from its own pace, else\n"
                      "(\"~\") from the run's prediction.json. A failed job's `reason` is the runner's own\n"
                      "message (its results file's exit_reason, else its line in logs/<id>.err); the table\n"
                      "cuts it to the terminal width with \"…\" and leaves out columns to fit (named under\n"
                      "it); csv and json have every field (step, epoch, elapsed_s, eta_s, ...). --only\n"
                      "shows the matching jobs (as report --only) and counts those.",
                      "\nExit codes: 0 ok, 1 runtime failure, 2 bad input (flags, not a run directory).\n"};
  if (!parse_run_dir(args, desc, "status", c.help, c.run_dir, help)) return 0;
  status::StatusFormat fmt;
  if (c.format == "table")
    fmt = status::StatusFormat::Table;
  else if (c.format == "json")
    fmt = status::StatusFormat::Json;
  else if (c.format == "csv")
    fmt = status::StatusFormat::Csv;
  else
    throw std::invalid_argument("--format: '" + c.format + "' is not one of table, json, csv");
  if (!(c.interval_s > 0) || !std::isfinite(c.interval_s))
    throw std::invalid_argument("--interval: must be > 0 seconds");
  const int width = table_width(c.width);
  if (c.limit < 0)
    throw std::invalid_argument("--limit " + std::to_string(c.limit) + ": expected N >= 0 (0: all)");
  for (const auto& list : c.states)
    for (const auto& s : base::split(list, ',')) {
      try {
        run::job_outcome_from_string(s);
      } catch (const std::invalid_argument&) {
        throw std::invalid_argument("--state " + list + ": '" + s +
                                    "' is not a state (pending, running, completed, failed, interrupted, "
                                    "target_reached, submitted)");
      }
    }
  std::vector<std::string> selectors = c.only;
  for (const auto& list : c.states) selectors.push_back("status=" + list);
  const std::vector<jobs::Selector> only = parse_only(selectors);
  // Selecting by id and status needs no parameters: the run's status cache answers it.
  const bool by_params = std::any_of(
      only.begin(), only.end(), [](const jobs::Selector& s) { return s.key != "id" && s.key != "status"; });
  // A run with Slurm ids gets Slurm's view overlaid; a local run is its state and results files.
  slurm::SlurmCli cli;
  if (!c.watch) {
    status::RunStatus st = by_params ? slurm::run_status(c.run_dir, &cli) : settled_status(c.run_dir, cli);
    const std::size_t all = st.jobs.size();
    keep_only(st, only);
    if (!only.empty() && st.jobs.empty() && all > 0)
      std::cerr << "status: " << (c.states.empty() ? "--only matches" : "--only/--state match")
                << " none of the run's " << all << " jobs\n";
    limit_rows(st, static_cast<std::size_t>(c.limit));
    status::print_status(st, fmt, std::cout, width);
    return 0;
  }
  // On a terminal the screen is redrawn in place; into a pipe or file each status is printed in
  // turn, without escape codes. The end is judged before reading the status, so the last status
  // printed is one of the run after it ended.
  const bool tty = ::isatty(STDOUT_FILENO) == 1 && fmt == status::StatusFormat::Table;
  const run::RunDir dir(c.run_dir);
  const auto interval = std::chrono::duration<double>(std::max(c.interval_s, 0.1));
  for (;;) {
    const bool held = run::lock_holder(dir).has_value();
    status::RunStatus st = slurm::run_status(c.run_dir, &cli);
    const bool over = run_over(held, st);  // judged on every job, not only the selected ones
    keep_only(st, only);
    limit_rows(st, static_cast<std::size_t>(c.limit));
    const std::string text = status_text(st, fmt, width);
    if (tty)
      std::cout << "\033[H\033[2J" << text;  // home, clear screen
    else
      std::cout << text << (fmt == status::StatusFormat::Table ? "\n" : "");
    std::cout << std::flush;
    if (over) break;
    std::this_thread::sleep_for(interval);
  }
  return 0;
}

int cmd_cancel(const Args& args) {
  CancelCli c;
  po::options_description desc = command_options(c.help);
  desc.add_options()("timeout", po::value<double>(&c.timeout_s),
                     "seconds to wait (default 120) until the run stopped: the local `gridrun run` exited, "
                     "or squeue no longer lists the cancelled Slurm jobs")(
      "wait", po::value<double>(&c.timeout_s), "the older name of --timeout");
  const HelpText help{
      "gridrun cancel RUN_DIR [options]",
      "A local run (`gridrun run`): asks the gridrun that holds the run (its lock file names\n"
      "it) to stop as on Ctrl-C: no new jobs, running jobs checkpoint and stop, recorded\n"
      "interrupted; waits until it exited and says which jobs it interrupted and the command\n"
      "that resumes them. A Slurm run (`gridrun submit`): scancel every array and collect job\n"
      "that squeue still lists, then wait until they are gone; `gridrun submit` again resumes\n"
      "the rest. Finished results stay.",
      "\nExit codes: 0 stopped, or nothing was running; 1 still running at the time limit;\n"
      "2 bad flags, the run is held by a gridrun on another host (cancel it there), or the\n"
      "process the lock file names is not proven to hold the lock (nothing is signalled).\n"};
  if (!parse_run_dir(args, desc, "cancel", c.help, c.run_dir, help)) return 0;
  if (c.timeout_s < 0 || !std::isfinite(c.timeout_s))
    throw std::invalid_argument("--timeout/--wait: must be >= 0");
  // A run some gridrun holds is a local run in progress (`gridrun submit` takes no lock).
  const run::RunDir dir(c.run_dir);
  if (!fs::is_directory(c.run_dir))
    throw std::invalid_argument("RUN_DIR: '" + c.run_dir + "' is not a directory");
  status::LocalCancelOptions lo;
  lo.timeout_s = c.timeout_s;
  const auto local = status::cancel_local_run(dir, lo);
  if (local.outcome != status::LocalCancelResult::Outcome::NotRunning) {
    status::print_local_cancel(dir, local, lo, std::cout);
    switch (local.outcome) {
      case status::LocalCancelResult::Outcome::TimedOut: return 1;
      case status::LocalCancelResult::Outcome::Elsewhere:
      case status::LocalCancelResult::Outcome::Unverified: return 2;
      default: return 0;
    }
  }
  slurm::SlurmCli cli;
  auto res = slurm::cancel_run(c.run_dir, cli, c.timeout_s, std::cout);
  return res.drained ? 0 : 1;
}

}  // namespace gridrun::app
