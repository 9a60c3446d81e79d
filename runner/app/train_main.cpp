// gridrun-train's process edge: parse options, create the communicator, train (or infer); every exception is
// converted here, once, into an exit code (2 bad input, 1 runtime failure) and, when other ranks
// exist, into MPI_Abort/ncclCommAbort of the whole job so no rank is left waiting in a collective.
#include <c10/util/Exception.h>
#include <unistd.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <iostream>
#include <memory>
#include <optional>
#include <vector>

#include "checkpoint.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/host.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/jobs/footprint.hpp"
#include "gridrun/jobs/params.hpp"
#include "gridrun/results/writer.hpp"
#include "gridrun/run/run_dir.hpp"
#include "gridrun/runner/communicator.hpp"
#include "gridrun/runner/errors.hpp"
#include "gridrun/runner/options.hpp"
#include "inference.hpp"
#include "model_cost.hpp"
#include "signals.hpp"
#include "trainer.hpp"
#include "worker.hpp"

namespace {
// "One line naming the file and the cause": LibTorch messages carry a backtrace on further lines.
std::string one_line(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  for (char& c : s)
    if (c == '\n') c = ' ';
  return s;
}
// A job that failed before its results file existed (unreadable data, a device it cannot use)
// still gets one, with status failed and the reason, so every failure is recorded where results
// are read. A file that already exists is left alone: the trainer has recorded its own failure
// there, or it holds an earlier attempt's rows that a resume continues. Written in a folder of its
// own and renamed into place: other ranks failing the same way call MPI_Abort, which can kill this
// process mid-write, and a half-written <id>.h5.partial would look like a job in progress.
void record_failure(const gridrun::runner::RunnerOptions& o, const std::string& why) {
  if (o.id.empty() || o.out_dir.empty()) return;
  gridrun::results::JobFileInfo info;
  info.id = o.id;
  info.run = o.run;
  info.params = o.job;
  info.ranks = static_cast<int>(o.job.ranks);
  info.gpus = static_cast<int>(gridrun::jobs::footprint(o.job).gpus);
  if (const std::string problem = gridrun::results::record_early_failure(o.out_dir, info, why);
      !problem.empty())
    std::cerr << "gridrun-train: " << one_line(problem) << "\n";
}

int run_job(const gridrun::runner::RunnerOptions& o, gridrun::runner::Communicator& comm) {
  return o.job.task == gridrun::jobs::Task::inference ? gridrun::runner::infer(o, comm)
                                                      : gridrun::runner::train(o, comm);
}

// The launched job, then its --then-job chain while each completes; `current` follows the job that
// runs (main records a failure in that job's file). A chained job's launch is this process's
// (launcher to communicator) plus its own set-up: launched_at moves forward by what the earlier
// jobs took, so first_step - launched_at says just that.
int run_launched(gridrun::runner::RunnerOptions& opts, std::vector<gridrun::runner::RunnerOptions>& chain,
                 gridrun::runner::Communicator& comm, double comm_ready,
                 const gridrun::runner::RunnerOptions*& current) {
  int done = run_job(opts, comm);
  for (auto& next : chain) {
    if (done != gridrun::runner::kExitCompleted) break;
    next.main_unix = gridrun::base::unix_now();
    if (opts.launched_at > 0) next.launched_at = opts.launched_at + (next.main_unix - comm_ready);
    current = &next;
    done = gridrun::runner::train(next, comm);
  }
  return done;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gridrun::runner;
  // A file that reaches RLIMIT_FSIZE would otherwise kill the process with SIGXFSZ before any
  // message; ignored, the write fails with EFBIG and is reported like any other write error.
  std::signal(SIGXFSZ, SIG_IGN);
  // A warm worker whose launcher is gone gets EPIPE from its done pipe, not a silent death.
  std::signal(SIGPIPE, SIG_IGN);
  const double main_unix = gridrun::base::unix_now();
  RunnerOptions opts;
  try {
    ParseResult pr = parse_options(argc, argv);
    if (pr.help_shown) return kExitCompleted;
    opts = std::move(pr.options);
    opts.main_unix = main_unix;
  } catch (const std::exception& e) {
    std::cerr << one_line(e.what()) << "\n";
    return kExitBadInput;
  }
  if (!opts.check_checkpoint.empty()) {
    // No communicator, no results file: this process only reads one checkpoint folder (see
    // Checkpointer::trial_read), so that a file that crashes the reader cannot crash the job.
    try {
      read_checkpoint_files(opts.check_checkpoint);
      return kExitCompleted;
    } catch (const c10::Error& e) {
      std::cerr << "gridrun-train: " << opts.check_checkpoint << ": " << one_line(e.what_without_backtrace())
                << "\n";
    } catch (const std::exception& e) {
      std::cerr << "gridrun-train: " << opts.check_checkpoint << ": " << one_line(e.what()) << "\n";
    }
    return kExitFailure;
  }
  if (opts.count_flops) {
    // No communicator, no results: the model's cost, for gridrun simulate (model=torchscript).
    try {
      const ModelCost c = model_cost(opts.job);
      std::printf("flops_per_sample %.17g\nmodel_params %lld\n", c.flops_per_sample,
                  static_cast<long long>(c.params));
      return 0;
    } catch (const c10::Error& e) {  // what LibTorch throws outside the model's own checks (memory)
      std::cerr << "gridrun-train: runtime failure: " << one_line(e.what_without_backtrace()) << "\n";
      return kExitFailure;
    } catch (const BadInput& e) {
      std::string why = e.what();
      if (why.rfind("gridrun-train: ", 0) == 0) why = why.substr(15);
      std::cerr << "gridrun-train: " << one_line(why) << "\n";
      return kExitBadInput;
    } catch (const std::exception& e) {
      std::cerr << "gridrun-train: " << one_line(e.what()) << "\n";
      return kExitFailure;
    }
  }
  // Before the communicator: a rank that waits in MPI_Init for a peer that never comes must still
  // notice that its owner is gone.
  watch_owner(opts.owner_pid, opts.owner_host);
  std::unique_ptr<Communicator> comm;
  int code = kExitFailure;
  std::string why;
  // --then-job: the jobs chained after this one, parsed and checked before anything starts; the
  // failure of the job that is running is recorded in that job's own file.
  std::vector<RunnerOptions> chain;
  std::optional<WarmWorker> worker;  // outlives the try: `current` may point into it
  const RunnerOptions* current = &opts;
  try {
    if (!opts.then_jobs.empty() && opts.job.task != gridrun::jobs::Task::train)
      throw BadInput("gridrun-train: --then-job: only training jobs are chained");
    chain.reserve(opts.then_jobs.size());
    for (const auto& file : opts.then_jobs) chain.push_back(chained_options(file, opts));
    const bool gpu = opts.job.device == gridrun::jobs::Device::gpu;
    comm = make_communicator(gpu ? "nccl" : "mpi", CommOptions{opts.job.comm_timeout_s});
    const double comm_ready = gridrun::base::unix_now();
    opts.comm_s = comm_ready - opts.main_unix;
    int done = run_launched(opts, chain, *comm, comm_ready, current);
    if (!opts.worker_dir.empty()) {
      // A warm worker: the next jobs come from the launcher until it has none (worker.hpp). A job
      // that does not complete ends the process with its code, as in a cold launch.
      worker.emplace(opts, *comm);
      while (done == kExitCompleted) {
        const RunnerOptions* next = worker->next();
        if (!next) break;
        current = next;
        done = run_job(*next, *comm);
      }
    }
    if (!gpu) return done;
    // GPU teardown guard: the results file is final and closed; destroy the communicator (NCCL
    // comm, then MPI_Finalize, which mpirun needs) and leave without static destructors. Why:
    // on the H100 a finished trainer twice never exited (gridrun run then waited for ever);
    // nothing after this point can change the job's outcome, and CUDA/NCCL/NVML teardown in
    // static destructors is where such exits hang. (gridrun run's watchdog ends any that still do.)
    comm.reset();
    std::fflush(nullptr);
    std::cout.flush();
    std::cerr.flush();
    std::_Exit(done);
  } catch (const BadInput& e) {
    code = kExitBadInput;
    why = e.what();
  } catch (const c10::Error& e) {
    why = std::string("runtime failure: ") + e.what_without_backtrace();
  } catch (const std::exception& e) {
    why = std::string("runtime failure: ") + e.what();
  } catch (...) {
    why = "runtime failure: unknown exception";
  }
  // Messages from inside often start with the program's name already; it is said once, here.
  for (const std::string p : {"runtime failure: gridrun-train: ", "gridrun-train: "})
    if (why.rfind(p, 0) == 0) why = why.substr(0, p.size() - 15) + why.substr(p.size());
  why = one_line(why);
  // Without a communicator, the launcher's environment says which process is rank 0.
  const char* env_rank = std::getenv("OMPI_COMM_WORLD_RANK");
  if (!env_rank) env_rank = std::getenv("PMI_RANK");
  if (comm ? comm->rank() == 0 : (!env_rank || std::string(env_rank) == "0")) record_failure(*current, why);
  if (comm && comm->size() > 1) comm->abort(code, why);  // never returns
  std::cerr << "gridrun-train: "
            << (comm ? "rank " + std::to_string(comm->rank()) + " (" + comm->host() + "): " : "") << why
            << "\n";
  return code;
}
