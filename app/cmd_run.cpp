// `gridrun run` and `gridrun simulate`: flags -> scheduler::RunOptions, then run_grid, then (after
// a real run) `gridrun collect` and `gridrun report` in-process, from one read of the job files.
// All flags are in RunCli below.
#include <unistd.h>

#include <boost/program_options.hpp>
#include <iostream>
#include <stdexcept>

#include "cli.hpp"
#include "commands.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/host.hpp"
#include "gridrun/base/table.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/jobs/params.hpp"
#include "gridrun/jobs/select.hpp"
#include "gridrun/run/prepare.hpp"
#include "gridrun/scheduler/calibrate.hpp"
#include "gridrun/scheduler/run_grid.hpp"
#include "gridrun/slurm/calibrate.hpp"

namespace po = boost::program_options;

namespace gridrun::app {

namespace {

// The flags bind to the fields of scheduler::RunOptions they set (no copy field by field); what
// the command line holds in another form (--max-parallel signed, --width 0, --only and --set as
// text, --format of the report) stays here and is converted once in run_impl.
struct RunCli {
  bool help = false;
  scheduler::RunOptions ro;
  int max_parallel = 0, width = 0, repeats = 0;
  bool no_report = false;
  std::vector<std::string> only, set;  // --only selectors, --set overrides (as given)
  std::string launch = run::to_string(scheduler::kDefaultLaunch);  // --launch as given
};

// --launch and --worker-idle: run, simulate (which predicts what they make) and calibrate.
void add_launch_flags(po::options_description& opts, std::string& launch, scheduler::RunOptions& ro) {
  const scheduler::RunOptions defaults;
  opts.add_options()("launch", po::value(&launch)->default_value(launch),
                     "warm: the ranks of a finished job take the next job of the same command (host, "
                     "cores, GPUs, ranks, threads) instead of exiting, saving the library load and "
                     "set-up of each launch; a job that fails in a warm worker is retried cold; cold: "
                     "one mpirun per job (docs/scheduler.md). simulate predicts it; calibrate measures "
                     "both launches")(
      "worker-idle", po::value(&ro.worker_idle_s)->default_value(defaults.worker_idle_s),
      "with --launch warm: seconds an idle warm worker waits for its next job before it exits");
}

// `given`: --launch was on the command line; the default (warm) gives way to cold where warm
// cannot go (an --out that is not UTF-8), with a note, where a given --launch warm is refused.
void check_launch_flags(scheduler::RunOptions& ro, const std::string& launch, bool given) {
  ro.launch = run::parse_launch(launch);
  if (!(ro.worker_idle_s >= 0)) throw std::invalid_argument("--worker-idle: must be >= 0");
  // A warm worker's task messages are JSON lines naming the job's files under --out.
  if (ro.launch == run::Launch::Warm) {
    const std::string out = base::absolute_path(ro.out);
    if (!base::is_utf8(out) && !given) {
      std::cerr << "note: launching cold: --out " << base::printable_line(out)
                << " is not valid UTF-8, and a warm worker's task messages (JSON) name files in it\n";
      ro.launch = run::Launch::Cold;
    } else if (!base::is_utf8(out))
      throw std::invalid_argument("--launch warm: --out " + base::printable_line(out) +
                                  " is not valid UTF-8, and a warm worker's task messages (JSON) "
                                  "name files in it; use --launch cold or an --out whose path is UTF-8");
  }
}

// The flags run and simulate share: where the run goes, how jobs are placed, which jobs, what the
// schedule is computed on (simulate is run --simulate: the same planning, nothing launched).
void add_plan_flags(po::options_description& opts, RunCli& o, bool simulate_cmd) {
  const scheduler::RunOptions d;
  opts.add_options()("out,o", po::value(&o.ro.out)->default_value(d.out),
                     "parent folder of the run directory OUT/<name>")(
      "policy,p", po::value(&o.ro.policy)->default_value(d.policy), "placement: packed | fifo | exclusive")(
      "max-parallel,j", po::value(&o.max_parallel)->default_value(0),
      "at most N jobs at once (0: as many as fit)")("gpus", po::value(&o.ro.resources.gpus),
                                                    "use N GPUs instead of the detected ones")(
      "cores", po::value(&o.ro.resources.cores), "use N cores instead of the detected ones")(
      "cluster", po::value(&o.ro.resources.cluster_file),
      simulate_cmd ? "cluster YAML (nodes: cores, gpus, count) to schedule on instead of this machine"
                   : "cluster YAML (nodes: cores, gpus, count) for --simulate/--dry-run")(
      "train-bin", po::value(&o.ro.train_bin),
      simulate_cmd ? "gridrun-train that counts a TorchScript model's FLOPs (default: next to gridrun)"
                   : "gridrun-train to launch (default: next to gridrun)")(
      "cpu-rate", po::value(&o.ro.cost.cpu_gflops_per_core)->default_value(d.cost.cpu_gflops_per_core),
      "cost model: sustained GFLOP/s per CPU core")(
      "gpu-rate", po::value(&o.ro.cost.gpu_gflops)->default_value(d.cost.gpu_gflops),
      "cost model: sustained GFLOP/s per GPU")(
      "rows", po::value(&o.ro.timeline_rows)->default_value(d.timeline_rows),
      simulate_cmd ? "timeline rows to print" : "timeline rows to print (--simulate/--dry-run)")(
      "against", po::value(&o.ro.against),
      simulate_cmd ? "RUN_DIR: put the prediction beside the measured run in RUN_DIR (its state.json): per "
                     "phase and per job, with the error"
                   : "RUN_DIR (with --simulate): put the prediction beside the measured run in RUN_DIR, "
                     "as `gridrun simulate --against`");
  add_table_flags(opts, o.ro.format, o.width,
                  simulate_cmd ? "table | json (makespan_s, phases {NAME: {makespan_s, jobs, max_running, "
                                 "arrangement}}, jobs)"
                               : "of the report printed at the end: table | markdown | csv | json (as "
                                 "`gridrun report --format`); with --simulate: table | json; with "
                                 "--dry-run: table");
  add_select_flags(opts, o.only, o.set);
  add_repeats_flag(opts, o.repeats);
  add_launch_flags(opts, o.launch, o.ro);
}

void add_run_flags(po::options_description& opts, RunCli& o) {
  const scheduler::RunOptions defaults;
  opts.add_options()("retries", po::value(&o.ro.retries)->default_value(defaults.retries),
                     "extra attempts per failed job (0-100)")(
      "rerun", po::value(&o.ro.rerun),
      "failed: rerun failed jobs from scratch; all: rerun everything; compare: rerun every compare-by "
      "phase from scratch in this one sitting (phases measured apart, under different load); phase=VALUE: "
      "rerun that compare-by phase's jobs from scratch, together (a phase the report could not measure in "
      "one sitting)")("dry-run,n", po::bool_switch(&o.ro.dry_run),
                      "print the placement plan and commands; launch nothing")(
      "simulate", po::bool_switch(&o.ro.simulate),
      "print the simulated schedule; launch nothing (= gridrun simulate)")(
      "exit-grace", po::value(&o.ro.exit_grace_s)->default_value(defaults.exit_grace_s),
      "seconds a job's processes may linger after its results are final before they are ended")(
      "heartbeat-timeout", po::value(&o.ro.heartbeat_timeout_s)->default_value(defaults.heartbeat_timeout_s),
      "end and fail a job whose rank 0 has not heartbeat for this many seconds (0: never)")(
      "no-report", po::bool_switch(&o.no_report), "skip collect and report at the end");
}

const HelpText kRunHelp{
    "gridrun run GRID.yaml [options]",
    "Runs a grid on this machine: places jobs side by side on disjoint cores and GPUs, launches\n"
    "each with mpirun + gridrun-train, retries failures with --resume, and ends with collect\n"
    "and report (--format, --width). Idempotent: completed jobs are skipped. Ctrl-C stops (jobs\n"
    "checkpoint); a second Ctrl-C kills. Writes OUT/<name>/ (see docs/scheduler.md).",
    "\nExit codes: 0 all jobs completed (or plan printed), 1 a job failed or the run was\n"
    "interrupted, 2 bad input (grid, flags, cluster file, infeasible job).\n"};
const HelpText kSimulateHelp{
    "gridrun simulate GRID.yaml [options]",
    "Computes the schedule of a grid without launching anything: makespan, utilization, the\n"
    "placement timeline and, for a compare-by grid, the predicted winner. Durations come from\n"
    "`gridrun calibrate` (OUT/<name>/calibration.json of this host and build), else from\n"
    "earlier results of the same job ids, else from a FLOPs cost model. With a calibration\n"
    "the prediction is also written to OUT/<name>/prediction.json.",
    "\nExit codes: 0 schedule printed, 1 runtime failure, 2 bad input (grid, flags, cluster file,\n"
    "infeasible job).\n"};

// --format: what the command prints decides which formats make sense (docs/cli.md).
void check_format(const RunCli& o, bool simulating) {
  if (simulating) {
    if (o.ro.format != "table" && o.ro.format != "json")
      throw std::invalid_argument("--format: expected table or json, got '" + o.ro.format + "'");
  } else if (o.ro.dry_run) {
    if (o.ro.format != "table")
      throw std::invalid_argument("--format: --dry-run prints its plan as text (table only)");
  } else if (!base::is_table_format(o.ro.format)) {
    throw std::invalid_argument("--format: expected table, markdown, csv or json, got '" + o.ro.format + "'");
  }
  if (!o.ro.against.empty() && !simulating)
    throw std::invalid_argument("--against: only with `gridrun simulate` (or --simulate)");
}

int run_impl(const Args& args, bool simulate_cmd) {
  const char* cmd = simulate_cmd ? "simulate" : "run";
  RunCli o;
  po::options_description opts = command_options(o.help);
  add_plan_flags(opts, o, simulate_cmd);
  if (!simulate_cmd) add_run_flags(opts, o);
  scheduler::RunOptions& ro = o.ro;
  const auto vm = parse_command(
      args, opts, {{"grid", "GRID.yaml", "the grid file (docs/grid.md)", 1, po::value(&ro.grid)}}, cmd,
      o.help, simulate_cmd ? kSimulateHelp : kRunHelp, std::cout);
  if (!vm) return 0;
  if (ro.grid.empty())
    throw std::invalid_argument(std::string("missing GRID.yaml (see gridrun ") + cmd + " --help)");
  check_grid_path(ro.grid);  // a run folder: the command meant (issue 58)
  if (o.max_parallel < 0) throw std::invalid_argument("--max-parallel: must be >= 0");
  if (ro.timeline_rows < 1) throw std::invalid_argument("--rows: must be >= 1");
  check_launch_flags(ro, o.launch, flag_given(*vm, "launch"));
  if (!(ro.cost.cpu_gflops_per_core > 0)) throw std::invalid_argument("--cpu-rate: must be > 0");
  if (!(ro.cost.gpu_gflops > 0)) throw std::invalid_argument("--gpu-rate: must be > 0");
  ro.simulate = ro.simulate || simulate_cmd;
  check_format(o, ro.simulate);
  const int width = table_width(o.width);
  if (vm->count("gpus") && ro.resources.gpus < 0) throw std::invalid_argument("--gpus: must be >= 0");
  if (vm->count("cores") && ro.resources.cores < 1) throw std::invalid_argument("--cores: must be >= 1");

  ro.overrides = jobs::parse_overrides(o.set, "--set");
  ro.only = jobs::parse_selectors(o.only, "--only", {"id"});
  ro.max_parallel = static_cast<std::size_t>(o.max_parallel);
  ro.repeats = check_repeats(o.repeats, vm->count("repeats") > 0);
  ro.tty = ::isatty(STDOUT_FILENO) != 0;
  ro.width = width;
  // The run's own output is progress lines; --format is the report's (below), --simulate's here.
  const std::string report_format = ro.format;
  if (!ro.simulate) ro.format = "table";
  const scheduler::RunOutcome r = scheduler::run_grid(ro, std::cout);
  if (!r.launched || r.interrupted || o.no_report) return r.exit_code;
  // The results side owns collect and report; they live in this binary (app/cmd_report.cpp).
  const Args report_args{r.run_dir, "--format", report_format, "--width", std::to_string(width)};
  const int rc = r.index_stale ? collect_and_report(r.run_dir, report_args) : cmd_report(report_args);
  if (rc != 0)
    std::cerr << "gridrun run: collect/report failed (exit " << rc << "); results are in " << r.run_dir
              << "\n";
  return r.exit_code != 0 ? r.exit_code : (rc != 0 ? 1 : 0);
}

// As RunCli: the flags bind to the fields of scheduler::CalibrateOptions they set; the Slurm site
// flags to the script options of `calibrate --slurm` (slurm::SlurmCalibrateOptions::script).
struct CalibrateCli {
  bool help = false, slurm = false;
  scheduler::CalibrateOptions co;
  slurm::ScriptOptions script;  // --launcher, --partition, --account, ... (slurm::site_options())
  int max_parallel = 0, repeats = 0;
  double budget_percent = 20;          // --budget, in % (co.budget_share is the fraction)
  std::vector<std::string> only, set;  // --only selectors, --set overrides (as given)
  std::string launch = run::to_string(scheduler::kDefaultLaunch);  // --launch as given
};

// The flags of this calibrate command that `gridrun run` takes too, as given (--out, --only/--set,
// and each flag given on the command line, defaults left out): the commands calibrate suggests
// must run the same jobs the same way (issue 58: "run it instead" dropped --out and --launch).
std::string run_flags(const po::variables_map& vm, const CalibrateCli& o) {
  const scheduler::RunOptions& ro = o.co.run;
  std::string flags = (ro.out != "runs" ? " --out " + base::shell_quote(ro.out) : "") +
                      run::selection_flags(ro.overrides, ro.only);
  const std::pair<const char*, std::string> given[] = {
      {"launch", run::to_string(ro.launch)},
      {"worker-idle", base::format_fixed(ro.worker_idle_s, 3)},
      {"policy", ro.policy},
      {"max-parallel", std::to_string(o.max_parallel)},
      {"cores", std::to_string(ro.resources.cores)},
      {"gpus", std::to_string(ro.resources.gpus)},
      {"repeats", std::to_string(o.repeats)},
      {"train-bin", ro.train_bin}};
  for (const auto& [flag, value] : given)
    if (flag_given(vm, flag)) flags += std::string(" --") + flag + " " + base::shell_quote(value);
  return flags;
}

// `calibrate --slurm`: one configuration at a time through sbatch/srun (slurm/calibrate.hpp).
int calibrate_on_slurm(const CalibrateCli& o, bool min_budget_given) {
  const scheduler::RunOptions& ro = o.co.run;
  slurm::SlurmCalibrateOptions so;
  so.grid_file = ro.grid;
  so.out_dir = ro.out;
  so.steps = o.co.steps;
  so.cluster_file = ro.resources.cluster_file;
  so.policy = ro.policy;
  // The Slurm groups keep their 2-minute floor unless told: each is a submission of its own (queue,
  // squeue polling), and the pairs of 2-host jobs run 2-5x slower together than alone.
  so.group_budget_s = min_budget_given ? o.co.min_budget_s : 120;
  so.script = o.script;
  const std::string self = base::self_exe();
  so.script.gridrun_bin = self.empty() ? std::string("gridrun") : self;
  so.script.train_bin = ro.train_bin.empty() ? scheduler::default_train_bin() : ro.train_bin;
  so.script.exec_bin = scheduler::default_exec_bin();  // command grids (docs/own-script.md)
  so.script.out_dir = ro.out;
  so.script.grid_file = ro.grid;
  slurm::check_script_options(so.script);
  const slurm::SlurmCli cli;
  const scheduler::CalibrateOutcome r = slurm::calibrate_on_slurm(so, cli, std::cout);
  std::cout << "calibration took " << base::format_duration(r.cal.cost_s) << "; wrote " << r.file
            << "; `gridrun simulate " << ro.grid << " --cluster CLUSTER.yaml"
            << (ro.out != "runs" ? " --out " + ro.out : "") << "` predicts from it\n";
  return r.failed > 0 ? 1 : 0;
}

// calibrate's numeric flags, right after parsing.
void check_calibrate_numbers(const CalibrateCli& o, const po::variables_map& vm) {
  const scheduler::CalibrateOptions& co = o.co;
  if (o.max_parallel < 0) throw std::invalid_argument("--max-parallel: must be >= 0");
  if (!(o.budget_percent > 0 && o.budget_percent <= 100))
    throw std::invalid_argument("--budget: must be in (0, 100]");
  if (!(co.min_budget_s >= 0)) throw std::invalid_argument("--min-budget: must be >= 0");
  if (co.alone_launches < 1 || co.alone_launches > scheduler::CalibrateOptions::kMaxAloneLaunches)
    throw std::invalid_argument("--launches " + std::to_string(co.alone_launches) + ": expected 1 to " +
                                std::to_string(scheduler::CalibrateOptions::kMaxAloneLaunches));
  if (vm.count("gpus") && co.run.resources.gpus < 0) throw std::invalid_argument("--gpus: must be >= 0");
  if (vm.count("cores") && co.run.resources.cores < 1) throw std::invalid_argument("--cores: must be >= 1");
}

}  // namespace

int cmd_calibrate(const Args& args) {
  CalibrateCli o;
  const scheduler::CalibrateOptions d;
  po::options_description opts = command_options(o.help);
  opts.add_options()("out,o", po::value(&o.co.run.out)->default_value(d.run.out),
                     "parent folder of the run directory OUT/<name>")(
      "policy,p", po::value(&o.co.run.policy)->default_value(d.run.policy),
      "placement the run will use: packed | fifo | exclusive (decides which jobs run side by side)")(
      "max-parallel,j", po::value(&o.max_parallel)->default_value(0), "at most N jobs at once, as for run")(
      "steps", po::value(&o.co.steps)->default_value(d.steps),
      "timed steps per configuration after its warm-up (3-100000)")(
      "launches", po::value(&o.co.alone_launches)->default_value(d.alone_launches),
      "launch each configuration alone N times and keep the median of each figure (1-10): for jobs "
      "whose time is mostly start-up, which varies from launch to launch")(
      "budget", po::value(&o.budget_percent)->default_value(d.budget_share * 100),
      "the whole calibration at most this % of the grid's predicted time: side-by-side groups "
      "only while it stays within")(
      "min-budget", po::value(&o.co.min_budget_s)->default_value(d.min_budget_s),
      "... or this many seconds, whichever is more; for a grid of a minute or more at most 25 % of "
      "it (--slurm: the groups' seconds)")("gpus", po::value(&o.co.run.resources.gpus),
                                           "use N GPUs instead of the detected ones")(
      "cores", po::value(&o.co.run.resources.cores), "use N cores instead of the detected ones")(
      "cluster", po::value(&o.co.run.resources.cluster_file),
      "with --slurm: the cluster's nodes (as for simulate), to co-run the groups the policy would "
      "place side by side; without --slurm refused (calibration measures this machine)")(
      "accept-load", po::bool_switch(&o.co.accept_load),
      "keep measurements taken while other processes took more than 10 % of the CPU (without it a "
      "disturbed measurement is taken again once, and one still disturbed stores nothing: exit 1); "
      "calibration.json records the load either way and simulate/run print it")(
      "slurm", po::bool_switch(&o.slurm),
      "calibrate on the Slurm cluster's nodes through sbatch/srun, one configuration at a time "
      "(for `gridrun simulate --cluster FILE` of a grid to `gridrun submit`)")(
      "launcher", po::value(&o.script.launcher)->default_value("srun"),
      "--slurm: srun | mpirun, as for submit")("train-bin", po::value(&o.co.run.train_bin),
                                               "gridrun-train to launch (default: next to gridrun)");
  add_launch_flags(opts, o.launch, o.co.run);
  o.script.default_time = "10";  // a calibration job is a few steps
  add_site_flags(opts, o.script, "--slurm: ");
  add_select_flags(opts, o.only, o.set);
  add_repeats_flag(opts, o.repeats);
  const HelpText help{
      "gridrun calibrate GRID.yaml [options]",
      "Runs every distinct configuration of the grid (model, batch per rank, ranks, device, threads,\n"
      "...) for a few steps on this machine, alone (the configurations of one device, ranks and\n"
      "threads one after another in one process: one launch), then side by side in the groups the\n"
      "placement policy would make, and stores launch, step, evaluation and checkpoint times and the\n"
      "side-by-side slowdowns in OUT/<name>/calibration.json. `gridrun simulate` and `gridrun run`\n"
      "then predict from it. No configuration steps longer than its longest job; side-by-side groups\n"
      "are measured while the whole calibration costs less than --budget % of the grid's predicted\n"
      "time or --min-budget seconds (at most 25 % of a grid of a minute or more), whichever is\n"
      "more; a grid that is cheaper to run than to\n"
      "predict is named. --only and --set select and change the jobs as for `gridrun run` (give\n"
      "simulate the same ones).",
      "\nExit codes: 0 calibrated, 1 a calibration run failed or stayed disturbed by other processes\n"
      "(nothing stored; see --accept-load), 2 bad input.\n"};
  const auto vm = parse_command(
      args, opts, {{"grid", "GRID.yaml", "the grid file (docs/grid.md)", 1, po::value(&o.co.run.grid)}},
      "calibrate", o.help, help, std::cout);
  if (!vm) return 0;
  scheduler::CalibrateOptions& co = o.co;
  if (co.run.grid.empty()) throw std::invalid_argument("missing GRID.yaml (see gridrun calibrate --help)");
  check_grid_path(co.run.grid);  // a run folder: the command meant (issue 58)
  const bool launch_given = flag_given(*vm, "launch");
  check_launch_flags(co.run, o.launch, launch_given);
  check_calibrate_numbers(o, *vm);
  co.run.overrides = jobs::parse_overrides(o.set, "--set");
  co.run.only = jobs::parse_selectors(o.only, "--only", {"id"});
  if (o.slurm && !launch_given) co.run.launch = run::Launch::Cold;  // the Slurm calibration launches cold
  if (o.slurm && co.run.launch == run::Launch::Warm)
    throw std::invalid_argument(
        "--launch warm: not with --slurm (the Slurm calibration launches each configuration cold; `gridrun "
        "submit --launch warm` runs a grid warm on Slurm)");
  if (o.slurm && co.alone_launches > 1)
    throw std::invalid_argument(
        "--launches: not with --slurm (the Slurm calibration launches each configuration once)");
  if (o.slurm) {
    // The Slurm calibration reads the grid itself (slurm/src/calibrate.cpp) and knows no selection.
    if (!co.run.overrides.empty() || !co.run.only.empty())
      throw std::invalid_argument(
          "--only/--set: not with --slurm (the Slurm calibration measures the whole grid)");
    return calibrate_on_slurm(o, flag_given(*vm, "min-budget"));
  }
  co.run.repeats = check_repeats(o.repeats, vm->count("repeats") > 0);
  co.run.max_parallel = static_cast<std::size_t>(o.max_parallel);
  co.budget_share = o.budget_percent / 100.0;
  const scheduler::CalibrateOutcome r = scheduler::calibrate_grid(co, std::cout);
  if (!r.refused.empty()) {
    // The same command, so that the rerun measures the same jobs the same way.
    std::string again = "gridrun calibrate " + base::shell_quote(co.run.grid) + run_flags(*vm, o);
    if (flag_given(*vm, "steps")) again += " --steps " + std::to_string(co.steps);
    if (flag_given(*vm, "launches")) again += " --launches " + std::to_string(co.alone_launches);
    std::cout << "calibrate: nothing stored: " << r.refused
              << ". A prediction from it would be too slow. Run it again on a quiet machine: " << again
              << " (or add --accept-load to keep it, its load recorded and printed with every prediction)\n";
    return 1;
  }
  std::cout << scheduler::describe_conditions(r.cal) << "\n";
  std::cout << "calibration took " << base::format_duration(r.cal.cost_s) << " (" << r.launches
            << " launch(es)), " << base::format_fixed(100.0 * r.cal.cost_s / std::max(r.predicted_s, 1e-9), 1)
            << " % of the grid's predicted " << base::format_duration(r.predicted_s) << " (budget "
            << base::format_duration(r.budget_s) << ": " << base::format_fixed(o.budget_percent, 0)
            << " % or " << base::format_duration(co.min_budget_s)
            << " (at most 25 % of a grid of a minute or more), whichever is more)\n";
  for (const auto& s : r.skipped) std::cout << "not measured side by side (over the budget): " << s << "\n";
  // The grid and the flags run shares with this command, so that "run it instead" runs these jobs.
  if (const std::string note = scheduler::short_grid_note(r.cal.cost_s, r.predicted_s,
                                                          base::shell_quote(co.run.grid) + run_flags(*vm, o));
      !note.empty())
    std::cout << note << "\n";
  // The same selection, or simulate predicts other jobs than the ones measured.
  std::cout << "wrote " << r.file << "; `gridrun simulate " << base::shell_quote(co.run.grid)
            << run_flags(*vm, o) << "` predicts from it\n";
  return r.failed > 0 ? 1 : 0;
}

int cmd_run(const Args& args) { return run_impl(args, false); }
int cmd_simulate(const Args& args) { return run_impl(args, true); }

}  // namespace gridrun::app
