// Executors: how a placed job is started and stopped. `local` runs `mpirun` on this machine;
// the Slurm executor lives in slurm/ (it submits instead of forking).
//
// Why an interface: the run loop (run_grid.hpp) only needs "start this job with these resources",
// "has it ended, with what code", "ask it to stop (checkpoint)" and "kill it", whatever launches it.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gridrun/base/host.hpp"
#include "gridrun/scheduler/placement.hpp"
#include "gridrun/scheduler/resources.hpp"

namespace gridrun::scheduler {

struct LaunchSpec {
  std::string job_id;
  std::string job_file;          // absolute path of runs/<name>/jobs/<id>.json
  std::string results_dir;       // absolute path of runs/<name>/results
  std::string log_out, log_err;  // appended to, one block per attempt
  std::string rankfile;          // where the local executor writes the Open MPI rankfile
  Request req;
  std::string host;
  std::vector<int> core_ids;       // OS cpu ids for binding; empty = run unbound
  std::string gpus;                // CUDA_VISIBLE_DEVICES value; "" for cpu jobs
  bool resume = false;             // pass --resume (a checkpoint exists)
  bool oversubscribe = false;      // more ranks than real cores (only with --cores beyond the machine)
  std::string train_bin;           // gridrun-train, or gridrun-exec for a command job
  int master_port = 0;             // > 0: --master-port for gridrun-exec (a command job's MASTER_PORT)
  std::string heartbeat_file;      // passed as --heartbeat; empty = none
  double gpu_memory_fraction = 0;  // --gpu-memory-fraction (0 = whole GPU)
  int owner_pid = 0;               // --owner-pid: the ranks stop when this process is gone (0 = none)
  // --then-job FILE each: jobs of the same device, ranks and threads trained after job_file in the
  // same process (`gridrun calibrate`, scheduler::plan_alone_processes); absolute paths.
  std::vector<std::string> then_job_files;
  // Warm launches (docs/scheduler.md) go through a WorkerPool (worker_pool.hpp): an idle warm
  // worker of the same process (`process_key`, binary, host, cores and GPUs) takes the job; else a
  // new worker is started, its pipes in a new folder under `workers_dir`. false: one process for
  // this job only (cold).
  bool warm = false;
  std::string workers_dir;
  std::string process_key;  // jobs::process_key(params).text(): which jobs may share a process
  Allocation place;         // where the engine put it (the pool's placement preference)
  // Set by the pool only: start the ranks as a warm worker whose pipes are in `worker_dir`, its
  // first done message to carry `worker_ticket` (run/worker_channel.hpp).
  std::string worker_dir, worker_ticket;
};

// The program of a job's ranks, for `gridrun run` and `gridrun calibrate` alike: `train_bin`
// (gridrun-train), or for a command job (a grid's command:, docs/own-script.md) `exec_bin`
// (gridrun-exec), cold (a warm worker is gridrun-train's) and with a MASTER_PORT of its own for
// torch.distributed's rendezvous. Sets spec.train_bin and spec.master_port, and clears spec.warm
// for a command job. Returns "" or why no free port was found; the job still runs then (its ranks
// meet through the run folder: gridrun-exec's rendezvous).
std::string set_program(LaunchSpec& spec, const jobs::JobParams& params, const std::string& train_bin,
                        const std::string& exec_bin);

// A launched job. The destructor kills what is still running (no orphans on unwinding).
class RunningJob {
 public:
  virtual ~RunningJob() = default;
  virtual int pid() const = 0;
  // Exit code once the job ended (128+N when killed by signal N), without blocking.
  virtual std::optional<int> try_wait() = 0;
  // Ask the job to stop: SIGTERM to its ranks, which checkpoint and exit 75.
  virtual void interrupt() = 0;
  // Stop it now: SIGKILL to ranks and launcher.
  virtual void kill() = 0;
  // Whether it runs in a warm worker's processes, which ran another job before it.
  virtual bool warm() const { return false; }
  // Why its warm worker was retired with it (a done message that could not be trusted: issue 57),
  // "" otherwise: the job itself did not fail, and is tried again cold.
  virtual std::string lost_reason() const { return ""; }
};

class Executor {
 public:
  virtual ~Executor() = default;
  virtual const char* name() const = 0;
  virtual std::vector<std::string> command(const LaunchSpec& spec) const = 0;  // for logs and --dry-run
  virtual std::unique_ptr<RunningJob> launch(const LaunchSpec& spec) = 0;
  // "NAME=value" entries put into the environment of every process launched from now on, and so of
  // everything those start: the run's launch token (run_loop.cpp, stop_leftovers), by which the
  // next `gridrun run` tells what this one left running from any other process.
  void set_launch_env(std::vector<std::string> env) { launch_env_ = std::move(env); }

 protected:
  std::vector<std::string> launch_env_;
};

// "local". Throws std::invalid_argument naming the choices ("slurm" is `gridrun submit`).
std::unique_ptr<Executor> make_executor(const std::string& name);

// After a crash of `gridrun run`, the jobs it left running are found by the launch token in their
// environment (base::own_processes_with_env) and stopped here: SIGTERM those that are not
// `mpirun` (the ranks checkpoint), wait up to `grace_s` for all to exit, then SIGKILL whatever is
// left. Every signal goes through the pidfd, so none reaches a process that took a PID later.
// Returns how many processes were given.
int terminate_processes(const std::vector<base::PinnedProcess>& procs, double grace_s);

}  // namespace gridrun::scheduler
