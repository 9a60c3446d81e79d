// The local executor: one `mpirun` per job, bound to the job's cores with a rankfile; or, with
// LaunchSpec::worker_dir, the `mpirun` of a warm worker whose ranks run job after job of the same
// process (runner/worker.hpp), which the WorkerPool (worker_pool.hpp) hands over on its pipes.
//
// Findings with Open MPI 4.1.4 (documented in docs/scheduler.md) that shaped this file:
// - `--cpu-set 0,1 --bind-to core` with -np 2 leaves each rank on both cores ("not bound"), and
//   `--cpu-set` conflicts with `--map-by core:PE=N`; a rankfile with physical ids
//   (`--mca rmaps_rank_file_physical 1`, `rank i=<host> slot=a-b`) binds each rank to its own cores.
// - SIGTERM to mpirun does not reach the ranks promptly ("Abort is in progress") and the job can
//   hang; SIGTERM sent to the ranks themselves (mpirun's children) lets them checkpoint, exit 75,
//   and mpirun then exits 75. So interrupt() signals the ranks.
// - SIGKILL of mpirun leaves its ranks running: they are found later by the launch token that
//   mpirun and its ranks inherit in their environment (set_launch_env; mpirun passes its whole
//   environment to local ranks) when the next `gridrun run` reconciles. Not by their command line:
//   any process may name a job file (a `tail -f` of one was killed that way, issue 45).
// - Nothing but gridrun itself can notice that gridrun was SIGKILLed (no handler runs, and mpirun
//   sits in its own process group), so each job gets --owner-pid: the ranks watch gridrun's pid
//   and checkpoint and exit 75 when it is gone; mpirun exits with them.
#include "executor.hpp"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <iomanip>
#include <sstream>
#include <stdexcept>

#include "gridrun/base/fs.hpp"
#include "gridrun/base/host.hpp"
#include "gridrun/base/net.hpp"
#include "gridrun/base/spawn.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/run/worker_channel.hpp"

namespace gridrun::scheduler {

namespace {

// SIGTERM (checkpoint and exit 75) or SIGKILL to the ranks of the mpirun `child`; an mpirun that
// has no ranks yet has nothing to checkpoint and is killed.
void signal_ranks(base::Child& child, int sig) {
  if (!child.running()) return;
  const auto kids = base::children_of(child.pid());
  for (int k : kids) ::kill(k, sig);
  if (kids.empty() || sig == SIGKILL) child.signal(SIGKILL);
}

// One mpirun, leading its own process group; base::Child reaps it exactly once and kills it if it
// is still running when this object goes away (no orphans on unwinding).
class Process : public RunningJob {
 public:
  explicit Process(base::Child child) : child_(std::move(child)) {}
  // The ranks too (they may not share mpirun's process group); base::Child then reaps mpirun.
  ~Process() override { kill(); }
  int pid() const override { return child_.pid(); }
  std::optional<int> try_wait() override { return child_.try_wait(); }
  void interrupt() override { signal_ranks(child_, SIGTERM); }
  void kill() override { signal_ranks(child_, SIGKILL); }

 private:
  base::Child child_;
};

class LocalExecutor : public Executor {
 public:
  const char* name() const override { return "local"; }

  std::vector<std::string> command(const LaunchSpec& s) const override {
    std::vector<std::string> a{"mpirun", "-np", std::to_string(s.req.ranks)};
    if (::geteuid() == 0) a.push_back("--allow-run-as-root");
    if (s.oversubscribe) a.push_back("--oversubscribe");
    if (!s.core_ids.empty()) {
      a.insert(a.end(),
               {"--mca", "rmaps_rank_file_physical", "1", "--rankfile", s.rankfile, "--report-bindings"});
    } else {
      a.insert(a.end(), {"--bind-to", "none"});
    }
    a.insert(a.end(), {"-x", "CUDA_VISIBLE_DEVICES", "-x", "OMP_NUM_THREADS", s.train_bin, "--job",
                       s.job_file, "--out", s.results_dir});
    if (s.resume) a.push_back("--resume");
    for (const auto& f : s.then_job_files) a.insert(a.end(), {"--then-job", f});
    if (!s.heartbeat_file.empty()) a.insert(a.end(), {"--heartbeat", s.heartbeat_file});
    if (s.master_port > 0) a.insert(a.end(), {"--master-port", std::to_string(s.master_port)});
    if (s.owner_pid > 0) a.insert(a.end(), {"--owner-pid", std::to_string(s.owner_pid)});
    if (s.gpu_memory_fraction > 0) {
      std::ostringstream f;
      f << s.gpu_memory_fraction;
      a.insert(a.end(), {"--gpu-memory-fraction", f.str()});
    }
    if (!s.worker_dir.empty()) a.insert(a.end(), {"--worker", s.worker_dir});
    return a;
  }

  std::unique_ptr<RunningJob> launch(const LaunchSpec& s) override {
    std::vector<std::string> env;
    if (!s.worker_ticket.empty()) env.push_back(std::string(run::kWorkerTicketEnv) + "=" + s.worker_ticket);
    return std::make_unique<Process>(spawn(s, env));
  }

 private:
  // `env`: set for this launch only (a warm worker's first ticket) besides the launch environment.
  base::Child spawn(const LaunchSpec& s, const std::vector<std::string>& env) {
    if (!s.core_ids.empty()) write_rankfile(s);
    base::SpawnOptions so;
    so.argv = command(s);
    // When the launcher starts (the runner splits the time before its first step from it).
    so.argv.insert(so.argv.end(), {"--launched-at", base::format_fixed(base::unix_now(), 3)});
    // cpu jobs see no GPU at all; gpu jobs see exactly their own.
    so.env_set = {"CUDA_VISIBLE_DEVICES=" + s.gpus,
                  "OMP_NUM_THREADS=" + std::to_string(s.req.threads_per_rank)};
    so.env_set.insert(so.env_set.end(), launch_env_.begin(), launch_env_.end());
    so.env_set.insert(so.env_set.end(), env.begin(), env.end());
    so.stdout_path = s.log_out;
    so.stderr_path = s.log_err;
    // Own process group: a terminal Ctrl-C reaches gridrun only, which then stops jobs in order.
    // Default signal handling and an empty mask: gridrun blocks signals for its signalfd.
    so.new_process_group = true;
    so.reset_signals = true;
    try {
      return base::spawn(so);
    } catch (const std::exception& e) {
      throw std::runtime_error("job " + s.job_id + ": " + e.what());
    }
  }

  static void write_rankfile(const LaunchSpec& s) {
    // rank i gets threads_per_rank consecutive entries of the job's core list.
    std::ostringstream os;
    const int t = s.req.threads_per_rank;
    for (int r = 0; r < s.req.ranks; ++r) {
      os << "rank " << r << "=" << s.host << " slot=";
      for (int k = 0; k < t; ++k)
        os << (k ? "," : "")
           << s.core_ids.at(static_cast<std::size_t>(r) * static_cast<std::size_t>(t) +
                            static_cast<std::size_t>(k));
      os << "\n";
    }
    base::write_file_atomic(s.rankfile, os.str());
  }
};

}  // namespace

std::string set_program(LaunchSpec& spec, const jobs::JobParams& params, const std::string& train_bin,
                        const std::string& exec_bin) {
  if (jobs::model_kind(params) != jobs::ModelKind::command) {
    spec.train_bin = train_bin;
    return "";
  }
  spec.train_bin = exec_bin;
  spec.warm = false;
  try {
    spec.master_port = base::free_local_port();
  } catch (const std::exception& e) {
    spec.master_port = 0;
    return e.what();
  }
  return "";
}

std::unique_ptr<Executor> make_executor(const std::string& name) {
  if (name == "local") return std::make_unique<LocalExecutor>();
  throw std::invalid_argument("unknown executor '" + name + "' (local; Slurm runs through `gridrun submit`)");
}

int terminate_processes(const std::vector<base::PinnedProcess>& procs, double grace_s) {
  for (const auto& p : procs)
    if (base::comm_of(p.pid()) != "mpirun") p.signal(SIGTERM);
  // These are not our children (their parent died), so waitpid cannot be used: each pidfd is
  // polled until its process exits, without polling loops.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(grace_s);
  for (const auto& p : procs) {
    const std::chrono::duration<double> left = deadline - std::chrono::steady_clock::now();
    p.wait_exit(std::max(0.0, left.count()));
  }
  for (const auto& p : procs) p.signal(SIGKILL);  // whatever is left (false for those that exited)
  return static_cast<int>(procs.size());
}

}  // namespace gridrun::scheduler
