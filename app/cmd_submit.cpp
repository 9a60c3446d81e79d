// `gridrun submit`: flag parsing and printing only; the work is in gridrun::slurm
// (slurm/include/gridrun/slurm/submit.hpp).
//
// The command fills one options struct from Boost.Program_options and validates it right away, so
// a bad flag exits 2 with its name before anything is written or submitted.
#include <unistd.h>

#include <algorithm>
#include <boost/program_options.hpp>
#include <filesystem>
#include <iostream>
#include <regex>
#include <sstream>
#include <stdexcept>

#include "cli.hpp"
#include "commands.hpp"
#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/host.hpp"
#include "gridrun/dataset/data_file.hpp"
#include "gridrun/jobs/params.hpp"
#include "gridrun/jobs/select.hpp"
#include "gridrun/scheduler/model_check.hpp"
#include "gridrun/scheduler/run_grid.hpp"
#include "gridrun/slurm/submit.hpp"

namespace po = boost::program_options;
namespace fs = std::filesystem;

namespace gridrun::app {
namespace {

struct SubmitCli {
  slurm::SubmitOptions submit;
  bool slurm = true;
  std::string template_file;
  std::size_t max_array = 0;                                           // 0 = ask Slurm
  int node_gpus = 0;                                                   // 0 = ask sinfo, else 4
  int node_cores = 0;                                                  // 0 = ask sinfo
  int repeats = 0;                                                     // --repeats (0: not given)
  std::string launch = run::to_string(slurm::ScriptOptions{}.launch);  // --launch as given
  // --only selectors and --set overrides as given (jobs/select.hpp parses them).
  std::vector<std::string> only, set;
  bool help = false;
};

// Checks and reads the flags that need more than a type (time limit, signal, sbatch lines,
// template, node shape), so that a bad one exits 2 with its name before anything is written.
void validate_submit(SubmitCli& c, const po::variables_map& vm) {
  auto& s = c.submit;
  auto& so = s.script;
  if (s.grid_file.empty()) throw std::invalid_argument("GRID: missing grid file (see --help)");
  check_grid_path(s.grid_file);  // a run folder: the command meant (issue 58)
  if (s.out_dir.empty()) throw std::invalid_argument("--out: must not be empty");
  if (vm.count("max-array")) {
    s.max_array = c.max_array;
    so.max_array = c.max_array;  // checked (1..kMaxArrayTasks) with the rest just below
  }
  static const std::regex kSignal("^((R|B|RB|BR):)?[A-Za-z0-9]+(@[0-9]+)?$");
  if (!so.signal.empty() && !std::regex_match(so.signal, kSignal))
    throw std::invalid_argument("--signal: '" + so.signal + "' is not [{R|B}:]SIG[@SECONDS]");
  if (!c.template_file.empty()) {
    std::string why;
    const auto text = base::try_read_file(c.template_file, base::kinds::kSbatchTemplate, &why);
    if (!text)
      throw std::invalid_argument("--template: " +
                                  (why.empty() ? "cannot read '" + c.template_file + "'" : why));
    so.template_text = *text;
    so.template_path = c.template_file;
  }
  // Everything that lands in a script (names, paths, --sbatch-arg, the template's lines).
  so.out_dir = s.out_dir;
  so.grid_file = s.grid_file;
  slurm::check_script_options(so);
  if (vm.count("node-gpus") && c.node_gpus < 1) throw std::invalid_argument("--node-gpus: must be >= 1");
  if (vm.count("node-cores") && c.node_cores < 1) throw std::invalid_argument("--node-cores: must be >= 1");
  if (!fs::exists(s.grid_file)) throw std::invalid_argument(s.grid_file + ": no such grid file");
}

}  // namespace

// --jobs-per-task's default with --launch warm: enough jobs per worker that a launch is paid once
// in eight, few enough that a grid of tens of jobs still spreads over several nodes.
constexpr std::size_t kWarmJobsPerTask = 8;

int cmd_submit(const Args& args) {
  SubmitCli c;
  auto& s = c.submit;
  auto& so = s.script;
  std::string out = "runs";
  po::options_description desc = command_options(c.help);
  desc.add_options()("slurm", po::bool_switch(&c.slurm),
                     "submit through Slurm (the only executor of submit; "
                     "accepted for symmetry with `gridrun run`)")(
      "out,o", po::value<std::string>(&out)->default_value("runs"),
      "runs directory: the run goes to OUT/<grid name>/ (same layout as `gridrun run`)")(
      "sbatch-arg", po::value<std::vector<std::string>>(&so.sbatch_args)->composing(),
      "extra '#SBATCH ARG' line in every array script, e.g. --sbatch-arg=--mem=8G (repeatable)")(
      "template", po::value<std::string>(&c.template_file),
      "file of site lines for every array script: #SBATCH lines first, then commands (module load)")(
      "max-array", po::value<std::size_t>(&c.max_array),
      "tasks per job array at most, 1-100000 (default: the cluster's MaxArraySize, else 1000)")(
      "throttle", po::value<std::size_t>(&so.throttle)->default_value(0),
      "run at most N tasks of each array at once (sbatch --array=...%N); 0 = no limit")(
      "pack-nodes", po::bool_switch(&s.pack_nodes),
      "bundle GPU jobs smaller than a node into whole-node allocations of concurrent "
      "`srun --exact` steps, placed by the scheduler's packed policy")(
      "node-gpus", po::value<int>(&c.node_gpus),
      "GPUs per node for --pack-nodes (default: sinfo of the partition, else 4)")(
      "node-cores", po::value<int>(&c.node_cores),
      "cores per node for --pack-nodes (default: sinfo of the partition)")(
      "launcher", po::value<std::string>(&so.launcher)->default_value("srun"),
      "srun (srun --mpi=pmix) or mpirun, to start the ranks inside each job (both span the hosts "
      "of a job with nodes > 1)")(
      "launch", po::value<std::string>(&c.launch)->default_value(c.launch),
      "cold (every job launched on its own) or warm (the jobs of a task after its first run in "
      "the first one's warm worker, without a launch each; single-node shapes; docs/slurm.md)")(
      "jobs-per-task", po::value<std::size_t>(&so.jobs_per_task),
      "jobs of one shape that each array task runs one after another, 1-100000 (its time limit is "
      "their sum; default 1, or 8 with --launch warm)")(
      "signal", po::value<std::string>(&so.signal)->default_value("B:USR1@120"),
      "sbatch --signal: warning sent to the batch shell before the time limit; forwarded to "
      "the runner, which checkpoints and is requeued")(
      "train-bin", po::value<std::string>(&so.train_bin),
      "gridrun-train as the compute nodes see it (default: next to this gridrun)")(
      "rerun", po::value<std::string>(&s.rerun),
      "phase=VALUE: submit that compare-by phase's jobs again, from scratch and together (a phase "
      "the report could not measure in one sitting)")("dry-run,n", po::bool_switch(&s.dry_run),
                                                      "write and print the scripts, submit nothing");
  add_site_flags(desc, so, "");
  add_select_flags(desc, c.only, c.set);
  add_repeats_flag(desc, c.repeats);
  const HelpText help{
      "gridrun submit GRID.yaml --slurm [options]",
      "Writes OUT/<name>/slurm/*.sbatch (one job array per resource shape: device, ranks,\n"
      "threads, time limit) and submits them with sbatch, then a collect job that builds\n"
      "results.h5 once all arrays ended. Running it again submits only jobs that are not\n"
      "completed, pending or running.",
      "\nExit codes: 0 submitted (or dry run written), 1 sbatch or Slurm failed, 2 bad input.\n"};
  const auto parsed = parse_command(
      args, desc,
      {{"grid", "GRID.yaml", "the grid file (docs/grid.md)", 1, po::value<std::string>(&s.grid_file)}},
      "submit", c.help, help, std::cout);
  if (!parsed) return 0;
  const po::variables_map& vm = *parsed;
  s.out_dir = out;
  s.overrides = jobs::parse_overrides(c.set, "--set");
  s.only = jobs::parse_selectors(c.only, "--only", {"id"});
  s.repeats = check_repeats(c.repeats, vm.count("repeats") > 0);
  so.launch = run::parse_launch(c.launch);
  if (!vm.count("jobs-per-task")) so.jobs_per_task = so.launch == run::Launch::Warm ? kWarmJobsPerTask : 1;
  validate_submit(c, vm);
  const std::string self = base::self_exe();
  so.gridrun_bin = self.empty() ? std::string("gridrun") : self;
  if (!vm.count("train-bin")) so.train_bin = scheduler::default_train_bin();
  so.exec_bin = scheduler::default_exec_bin();  // command grids (docs/own-script.md)

  slurm::SlurmCli cli;
  if (s.pack_nodes) {
    if (vm.count("node-gpus"))
      so.node_gpus = c.node_gpus;
    else if (auto g = cli.node_gpus(so.partition))
      so.node_gpus = *g;
    if (vm.count("node-cores")) s.node_cores = c.node_cores;
  }
  s.check_data_file = dataset::check_job_data_file;
  // The model is built here by the gridrun-train next to this gridrun (--train-bin is the compute
  // nodes' path), before anything is written or queued.
  s.check_model_file = scheduler::model_checker(scheduler::default_train_bin()).callback();
  auto res = slurm::submit(s, cli, std::cout);
  if (s.dry_run) {
    for (const auto& a : res.scripts.arrays)
      std::cout << "==> " << a.script_path << " <==\n" << a.script << "\n";
    if (!res.scripts.collect_script.empty())
      std::cout << "==> " << res.scripts.collect_path << " <==\n" << res.scripts.collect_script;
    std::cout << "gridrun submit: dry run: " << res.scripts.arrays.size() << " array script(s) for "
              << (res.total_jobs - res.skipped_jobs) << " job(s) written to "
              << run::RunDir(res.run_dir).slurm_dir() << ", nothing submitted\n";
    return 0;
  }
  if (res.submitted_jobs > 0)
    std::cout << "gridrun submit: " << res.submitted_jobs << " job(s) submitted in " << res.array_ids.size()
              << " array(s), " << res.skipped_jobs << " already completed/queued; watch with: gridrun status "
              << res.run_dir << "\n";
  return 0;
}

}  // namespace gridrun::app
