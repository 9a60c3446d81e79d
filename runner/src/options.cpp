// gridrun-train's command line: the one place where flags are declared, parsed and validated.
// The job's parameters are validated by jobs::check_values and jobs::check, the planner's checks.
//
// Job parameters become flags generated from jobs::param_table() (name with '_' -> '-'), so the flag
// set can never drift from the parameter table. Values are parsed with jobs::parse_value, the same
// parser the grid loader uses, so `--lr 1e-3` means exactly what `lr: 1e-3` means in a grid.
#include "gridrun/runner/options.hpp"

#include <boost/program_options.hpp>

#include <algorithm>

#include <filesystem>
#include <iostream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "gridrun/base/text.hpp"
#include "gridrun/jobs/footprint.hpp"
#include "gridrun/jobs/job.hpp"
#include "gridrun/jobs/suggest.hpp"
#include "gridrun/run/run_dir.hpp"
#include "gridrun/runner/errors.hpp"

namespace gridrun::runner {
namespace po = boost::program_options;

namespace {

std::string flag_of(const std::string& param) {
  std::string f = param;
  for (char& c : f)
    if (c == '_') c = '-';
  return f;
}

std::string help_of(const jobs::ParamSpec& s) {
  std::ostringstream h;
  h << s.help;
  if (!s.choices.empty()) {
    h << " {";
    for (std::size_t i = 0; i < s.choices.size(); ++i) h << (i ? "," : "") << s.choices[i];
    h << "}";
  }
  h << " (default " << jobs::to_string(s.default_value) << ")";
  return h.str();
}

// The parameter flags given on the command line, parsed with the grid's parser: they apply to the
// launched job and to every job the process takes after it (chained or warm).
jobs::Params parameter_flags(const po::variables_map& vm) {
  jobs::Params given;
  for (const auto& spec : jobs::param_table()) {
    const std::string f = flag_of(spec.name);
    if (!vm.count(f)) continue;
    try {
      given[spec.name] = jobs::parse_value(spec, vm[f].as<std::string>());
    } catch (const std::exception& e) {
      throw BadInput("gridrun-train: --" + f + ": " + e.what());
    }
  }
  return given;
}

// The job's parameters: the job file's (or the defaults), then the parameter flags over them, then
// the batch fields by jobs::resolve_batch (the planner's derivation). Fills job, id, run and meta.
void resolve_job(RunnerOptions& o) {
  jobs::Params p;
  if (!o.job_file.empty()) {
    jobs::Job job;
    try {
      job = jobs::read_job_file(o.job_file);
    } catch (const std::exception& e) {
      throw BadInput(std::string("gridrun-train: --job ") + o.job_file + ": " + e.what());
    }
    p = jobs::from_struct(job.params);
    o.id = job.id;
    o.run = job.run;
    o.meta = job.meta;
  } else {
    for (const auto& spec : jobs::param_table()) p[spec.name] = spec.default_value;
  }
  const jobs::Params& given = o.parameter_flags;
  for (const auto& [name, value] : given) p[name] = value;
  try {
    o.job = jobs::to_struct(p);
  } catch (const std::exception& e) {
    throw BadInput(std::string("gridrun-train: ") + e.what());
  }
  // A manual run without --lr gets its model's default lr, as the planner gives it (issue 34).
  if (o.job_file.empty() && !given.count("lr")) o.job.lr = jobs::default_lr(o.job.model, o.job.task);
  // Keep batch_per_rank * ranks == global_batch whichever of them was overridden; a job file with
  // no batch override keeps its values (jobs::check then verifies them).
  if (given.count("global_batch") && !given.count("batch_per_rank")) {
    if (auto bad = jobs::resolve_batch(o.job, jobs::BatchGiven::Global))
      throw BadInput("gridrun-train: --global-batch: " + bad->message);
  } else if (given.count("batch_per_rank") || given.count("ranks") || o.job_file.empty()) {
    jobs::resolve_batch(o.job, jobs::BatchGiven::PerRank);
  }
  if (o.job_file.empty() || !given.empty()) o.id = jobs::job_id(o.job);
}

// "; did you mean '--epochs'?" for an unknown flag close to one of `groups` (jobs::flag_hint, the
// rule `gridrun` uses for its flags; docs/cli.md); "" when none is close.
std::string unknown_flag_hint(const po::unknown_option& e,
                              const std::vector<const po::options_description*>& groups) {
  std::vector<std::string> names;
  for (const auto* g : groups)
    for (const auto& opt : g->options()) names.push_back(opt->long_name());
  return jobs::flag_hint(e.get_option_name(), names);
}

// The layout of every `gridrun CMD --help` (docs/cli.md): usage, what it does, options, exit codes.
void print_help(const po::options_description& general, const po::options_description& params,
                std::ostream& os) {
  os << "usage: mpirun -np R gridrun-train --job JOB.json --out DIR [options] [overrides]\n"
        "       gridrun-train --model mlp --epochs 1 --out DIR [options]   (manual run, no job file)\n"
        "       gridrun-train -h | --help | -V | --version\n\n"
        "Trains (or evaluates) one job on the ranks mpirun or srun started: the job file's\n"
        "parameters, then the overrides below over them, checked as `gridrun plan` checks a grid.\n"
        "Writes OUT/<id>.h5 (docs/results.md); `gridrun run` and `gridrun submit` launch it.\n\n"
     << general << "\n"
     << params << "\nExit codes: 0 done, 1 runtime failure, 2 bad input, 75 interrupted after checkpoint.\n";
}

// The launcher-facing flags' values, right after parsing (the job's own: validate).
void check_flags(const RunnerOptions& o) {
  if (o.out_dir.empty()) throw BadInput("gridrun-train: --out DIR is required (results directory)");
  if (o.log_every < 1) throw BadInput("gridrun-train: --log-every must be >= 1");
  if (!o.dump_logits.empty() && o.job.task != jobs::Task::inference)
    throw BadInput("gridrun-train: --dump-logits is for task=inference (this job has task=" +
                   base::to_string(o.job.task) + ")");
  if (o.peak_tflops < 0) throw BadInput("gridrun-train: --peak-tflops must be >= 0");
  if (!o.probe_file.empty() && !std::filesystem::exists(o.probe_file))
    throw BadInput("gridrun-train: --probe: no such file '" + o.probe_file + "'");
  if (o.util_hz < 0 || o.util_hz > 1000) throw BadInput("gridrun-train: --util-hz must be in [0, 1000]");
  if (o.launched_at < 0)
    throw BadInput("gridrun-train: --launched-at must be >= 0 (seconds since the epoch)");
  if (o.owner_pid < 0) throw BadInput("gridrun-train: --owner-pid must be >= 0");
  if (!(o.worker_rss_growth >= 1)) throw BadInput("gridrun-train: --worker-rss-growth must be >= 1");
  if (!o.worker_dir.empty() && !std::filesystem::is_directory(o.worker_dir))
    throw BadInput("gridrun-train: --worker: no such folder '" + o.worker_dir + "'");
  if (o.gpu_memory_fraction < 0 || o.gpu_memory_fraction > 1)
    throw BadInput("gridrun-train: --gpu-memory-fraction must be in [0, 1]");
}

}  // namespace

ParseResult parse_options(int argc, const char* const* argv) {
  ParseResult res;
  RunnerOptions& o = res.options;
  const RunnerOptions d;  // each flag's default is the option struct's
  po::options_description general("options", 100, 50);
  general.add_options()("help,h", "show this help and exit")("version,V", "print the version and exit")(
      "job", po::value<std::string>(&o.job_file), "job file written by `gridrun plan/run`")(
      "out,o", po::value<std::string>(&o.out_dir), "results directory (required)")(
      "checkpoint-dir", po::value<std::string>(&o.checkpoint_dir),
      "checkpoint folder (default <out>/../checkpoints/<id>)")("resume", po::bool_switch(&o.resume),
                                                               "continue from the latest checkpoint, if any")(
      "log-every", po::value<std::int64_t>(&o.log_every)->default_value(d.log_every),
      "steps between progress lines and per-rank timing gathers")(
      "util-hz", po::value<double>(&o.util_hz)->default_value(d.util_hz),
      "utilisation samples per second (0 = off)")(
      "init-out", po::value<std::string>(&o.init_out),
      "write the initial weights (after the broadcast) to this HDF5 file, one dataset per name")(
      "dump-params", po::value<std::string>(&o.dump_params),
      "write final parameters (float32, registration order) to FILE")(
      "dump-logits", po::value<std::string>(&o.dump_logits),
      "task=inference: write every test sample's logits to FILE (raw float32 [samples, classes], "
      "sample order)")("quiet", po::bool_switch(&o.quiet), "no progress lines")(
      "peak-tflops", po::value<double>(&o.peak_tflops)->default_value(d.peak_tflops),
      "peak TFLOP/s of one device (gpu) or of the job's cores (cpu) for /summary/mfu; 0 = built-in "
      "GPU table (H100, H200, A100, V100) or, on CPU, the `gridrun probe` file")(
      "heartbeat", po::value<std::string>(&o.heartbeat_file),
      "file rank 0 rewrites at most once a second from the training loop; `gridrun run` ends a "
      "job whose heartbeat is older than its --heartbeat-timeout")(
      "gpu-memory-fraction", po::value<double>(&o.gpu_memory_fraction)->default_value(d.gpu_memory_fraction),
      "largest share of the GPU's memory this job's allocator may hold, in (0, 1]; 0 = no cap "
      "(set by `gridrun run --jobs-per-gpu N` to 1/N)")(
      "owner-pid", po::value<long>(&o.owner_pid)->default_value(d.owner_pid),
      "process that owns this job (`gridrun run` passes its own): when it is gone, even "
      "SIGKILLed, the job checkpoints and exits 75 as on SIGTERM; 0 = none")(
      "launched-at", po::value<double>(&o.launched_at)->default_value(d.launched_at),
      "when the launcher started this job's command (mpirun/srun), in seconds since the epoch; "
      "`gridrun run` and the Slurm task pass it, so /summary can split launch from set-up (0 = unknown)")(
      "owner-host", po::value<std::string>(&o.owner_host),
      "host of --owner-pid; ranks on other hosts do not watch it (default: every rank's own)")(
      "probe", po::value<std::string>(&o.probe_file),
      "`gridrun probe` JSON for CPU peaks (default: ~/.cache/gridrun/probe.json if present)")(
      "check-checkpoint", po::value<std::string>(&o.check_checkpoint),
      "only read the checkpoint folder DIR (ckpt-<step>) and exit: 0 readable, 1 damaged; what "
      "--resume runs first in a process of its own, so a file that crashes the reader cannot")(
      "count-flops", po::bool_switch(&o.count_flops),
      "the model check: only build the job's model on its data set's input (a TorchScript file: "
      "the archive check, the load and one trial forward) and print `flops_per_sample F` and "
      "`model_params N` (forward FLOPs per sample, counted from the model), then exit 0; a model "
      "that cannot be built is one line naming the file and why, exit 2. `gridrun plan`, `run`, "
      "`submit` and `calibrate` run it once per model file and input before anything is queued")(
      "then-job", po::value<std::vector<std::string>>(&o.then_jobs)->composing(),
      "after the job completes, train this job file too in the same process (repeatable; same "
      "device, ranks and threads): `gridrun calibrate` measures several configurations per launch")(
      "worker", po::value<std::string>(&o.worker_dir),
      "warm worker: after each job that completes, report it on DIR/done (rank 0) and wait on "
      "DIR/task.<rank> for the next job of the same device, ranks and threads; leave when the "
      "launcher closes DIR's pipes (`gridrun run --launch warm` makes them; docs/scheduler.md)")(
      "worker-rss-growth", po::value<double>(&o.worker_rss_growth)->default_value(d.worker_rss_growth),
      "with --worker: leave after a job that leaves resident memory above this many times its "
      "size after the first job, plus 256 MiB");
  po::options_description hidden("hidden test hooks");
  hidden.add_options()("stop-after-step",
                       po::value<std::int64_t>(&o.stop_after_step)->default_value(d.stop_after_step), "")(
      "fail-at-step", po::value<std::int64_t>(&o.fail_at_step)->default_value(d.fail_at_step), "")(
      "hang-at-step", po::value<std::int64_t>(&o.hang_at_step)->default_value(d.hang_at_step), "")(
      "fail-rank", po::value<std::int64_t>(&o.fail_rank)->default_value(d.fail_rank), "");
  po::options_description params("job parameter overrides (docs/grid.md)", 100, 50);
  std::map<std::string, std::string> flag_values;
  for (const auto& spec : jobs::param_table()) {
    auto* v = po::value<std::string>()->value_name("V");
    if (spec.type == jobs::Type::Bool) v->implicit_value("true");
    params.add_options()(flag_of(spec.name).c_str(), v, help_of(spec).c_str());
  }
  po::options_description all;
  all.add(general).add(hidden).add(params);
  po::variables_map vm;
  try {
    // No prefix guessing, as in `gridrun` (app/commands.hpp kNoGuessing): "--epoch" is not "--epochs".
    po::store(po::command_line_parser(argc, argv)
                  .options(all)
                  .style(po::command_line_style::unix_style ^ po::command_line_style::allow_guessing)
                  .run(),
              vm);
    po::notify(vm);
  } catch (const po::unknown_option& e) {
    throw BadInput(std::string("gridrun-train: ") + e.what() + unknown_flag_hint(e, {&general, &params}) +
                   " (see --help)");
  } catch (const po::error& e) {
    throw BadInput(std::string("gridrun-train: ") + e.what() + " (see --help)");
  }
  if (vm.count("help")) {
    print_help(general, params, std::cout);
    res.help_shown = true;
    return res;
  }
  if (vm.count("version")) {
    // The version `gridrun --version` prints (both from the build's PROJECT_VERSION and commit).
    std::cout << "gridrun-train " GRIDRUN_VERSION " (" GRIDRUN_GIT_COMMIT ")\n";
    res.help_shown = true;
    return res;
  }

  if (!o.check_checkpoint.empty()) return res;  // reads one folder; needs no job or --out
  o.parameter_flags = parameter_flags(vm);
  resolve_job(o);
  if (o.count_flops) {
    validate(o);
    return res;
  }
  check_flags(o);
  o.checkpoint_dir_given = !o.checkpoint_dir.empty();
  if (!o.checkpoint_dir_given) o.checkpoint_dir = run::RunDir::of_results_dir(o.out_dir).checkpoint_dir(o.id);
  validate(o);
  return res;
}

namespace {
// `first`'s options for another job file of the same process: the flags that apply to every job
// (--out, --owner-pid, the parameter flags, ...) as `first` has them, the job and what follows from
// it (id, checkpoint folder unless --checkpoint-dir was given, the checks) from `job_file`, or from
// a warm worker's `task` with its resume, heartbeat and launch time. What main and the worker set
// per job (main_unix, comm_s, warm) starts unset. Throws BadInput when the job cannot follow
// `first` on its ranks.
RunnerOptions options_for(const RunnerOptions& first, const std::string& job_file, const std::string& what,
                          const run::WorkerTask* task = nullptr) {
  if (first.job_file.empty())
    throw BadInput("gridrun-train: " + what + " needs --job (the first job of the process)");
  RunnerOptions o = first;
  o.job_file = job_file;
  if (task) {
    o.resume = task->resume;
    o.heartbeat_file = task->heartbeat_file;
    o.launched_at = task->launched_at;  // checked with the other flags below
  }
  o.then_jobs.clear();
  o.main_unix = 0;
  o.comm_s = 0;
  o.warm = false;
  o.meta.clear();
  resolve_job(o);
  check_flags(o);
  if (!o.checkpoint_dir_given) o.checkpoint_dir = run::RunDir::of_results_dir(o.out_dir).checkpoint_dir(o.id);
  validate(o);
  if (jobs::process_key(o.job) != jobs::process_key(first.job))
    throw BadInput(
        "gridrun-train: " + what + " " + job_file +
        ": a job in the same process must run on the first job's device, ranks, threads and nodes");
  return o;
}
}  // namespace

RunnerOptions chained_options(const std::string& job_file, const RunnerOptions& first) {
  RunnerOptions o = options_for(first, job_file, "--then-job");
  if (o.job.task != jobs::Task::train)
    throw BadInput("gridrun-train: --then-job " + job_file + ": only training jobs are chained");
  return o;
}

RunnerOptions next_job_options(const run::WorkerTask& task, const RunnerOptions& first) {
  RunnerOptions o = options_for(first, task.job_file, "--worker", &task);
  o.warm = true;
  return o;
}

void validate(const RunnerOptions& o) {
  // Values first (a job file bypasses the grid loader's checks), then jobs::check: the rules
  // `gridrun plan` applies to every job of a grid, so plan and train never disagree.
  for (const auto& bad : jobs::check_values(jobs::from_struct(o.job)))
    throw BadInput("gridrun-train: " + bad.key + ": " + bad.message);
  for (const auto& bad : jobs::check(o.job)) throw BadInput("gridrun-train: " + bad.key + ": " + bad.message);
}

}  // namespace gridrun::runner
