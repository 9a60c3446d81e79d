// The local executor: one `mpirun` per job, bound to the job's cores with a rankfile; or, with
// LaunchSpec::warm, one `mpirun` per warm worker whose ranks run job after job of the same command
// (runner/worker.hpp), handed over on the worker's pipes (run/worker_channel.hpp).
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
#include <filesystem>
#include <iomanip>
#include <set>
#include <sstream>
#include <stdexcept>

#include "gridrun/base/fs.hpp"
#include "gridrun/base/host.hpp"
#include "gridrun/base/net.hpp"
#include "gridrun/base/own_dir.hpp"
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

// A warm worker: one mpirun whose ranks take job after job. Shared by the pool (LocalExecutor) and
// the handle of the job it runs (WarmJob).
struct Worker {
  base::Child proc;
  run::WorkerPipes pipes;
  std::string dir;
  std::string key;  // the launch command without what is the job's own (worker_key)
  std::string host;
  std::set<int> cores;
  std::set<std::string> gpus;
  std::string job_id;  // the job it runs; "" when idle
  std::string ticket;  // the secret its done message for job_id must carry (run::check_done)
  std::string lost;    // why it was retired with its job: a done message it could not trust
  bool retiring = false;
  double idle_since = 0;

  bool idle() const { return job_id.empty() && !retiring && proc.running(); }
  // Closing the task pipes is the worker's signal to leave: every rank reads end-of-file.
  void retire() {
    retiring = true;
    pipes.tasks.clear();
  }
  // A message it cannot trust (issue 57): nothing more of it is believed. Its ranks are killed (a
  // job whose end cannot be told must not go on), and the job is tried again cold (lost()).
  void distrust(const std::string& why) {
    lost = "worker " + std::filesystem::path(dir).filename().string() + "'s done pipe: " + why;
    pipes.done.close();
    retire();
    signal_ranks(proc, SIGKILL);
  }
  // Its job's message, when the job ended and the worker went on (runner/worker.hpp).
  std::optional<int> done_message() {
    try {
      while (auto line = pipes.done.read_line(0, nullptr)) {
        run::WorkerDone d;
        try {
          d = run::decode_done(*line);
        } catch (const std::exception& e) {
          distrust(e.what());
          return std::nullopt;
        }
        // rank 0 is a child of mpirun (signal_ranks finds the ranks the same way).
        if (const std::string why = run::check_done(d, job_id, ticket, base::children_of(proc.pid()));
            !why.empty()) {
          distrust(why);
          return std::nullopt;
        }
        job_id.clear();
        ticket.clear();
        idle_since = base::unix_now();
        if (d.retiring) retire();
        return d.code;
      }
    } catch (const std::exception& e) {  // a line past run::kMaxDoneLineBytes
      distrust(e.what());
    }
    return std::nullopt;
  }
  // Whether its done pipe holds anything while it is idle: no message is due, so the worker is not
  // given another job (whoever wrote it could be answering for that job next).
  bool stray_message() {
    try {
      if (!pipes.done.read_line(0, nullptr)) return false;
    } catch (const std::exception&) {
    }
    return true;
  }
};

// The job a warm worker runs. Its end is the worker's message, or the worker's exit (a job that
// does not complete ends its worker). Destroyed while its job still runs, it kills the worker.
class WarmJob : public RunningJob {
 public:
  WarmJob(std::shared_ptr<Worker> w, bool warm) : w_(std::move(w)), warm_(warm) {}
  ~WarmJob() override {
    if (w_->job_id.empty()) return;
    kill();
    w_->job_id.clear();  // the pool reaps it now (retire_idle), as any ended worker
  }
  int pid() const override { return w_->proc.pid(); }
  bool warm() const override { return warm_; }
  std::optional<int> try_wait() override {
    if (w_->lost.empty())
      if (auto code = w_->done_message()) return code;
    if (auto code = w_->proc.try_wait()) {
      w_->job_id.clear();
      return code;
    }
    return std::nullopt;
  }
  std::string lost_reason() const override { return w_->lost; }
  void interrupt() override { signal_ranks(w_->proc, SIGTERM); }
  void kill() override {
    w_->retire();
    signal_ranks(w_->proc, SIGKILL);
  }

 private:
  std::shared_ptr<Worker> w_;
  bool warm_;
};

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
    return a;
  }

  ~LocalExecutor() override {
    // Idle workers leave on end-of-file; whatever is still there after a short wait is killed.
    for (auto& w : pool_) w->retire();
    for (auto& w : pool_)
      if (auto p = base::PinnedProcess::open(w->proc.pid()); p && w->proc.running()) p->wait_exit(5.0);
    for (auto& w : pool_) {
      signal_ranks(w->proc, SIGKILL);
      w->proc = base::Child();
      remove_dir(*w);
    }
  }

  std::unique_ptr<RunningJob> launch(const LaunchSpec& s) override {
    retire_idle(-1);  // reap ended workers only
    const std::string key = s.warm ? worker_key(s) : "";
    // An idle worker of this command takes the job; one whose pipes no longer take it retires.
    while (auto w = s.warm ? idle_worker(key) : nullptr) {
      if (w->stray_message()) {
        w->retire();
        continue;
      }
      const std::string ticket = run::new_worker_ticket();
      const std::string line = run::encode(run::WorkerTask{s.job_file, s.resume, base::unix_now(),
                                                           s.heartbeat_file, s.log_out, s.log_err, ticket});
      bool sent = true;
      for (auto& p : w->pipes.tasks) sent = p.write_line(line) && sent;
      if (!sent) {
        w->retire();
        continue;
      }
      w->job_id = s.job_id;
      w->ticket = ticket;
      return std::make_unique<WarmJob>(w, true);
    }
    // Idle workers on this job's cores or GPUs leave: the job would share them.
    std::set<std::string> gpus;
    for (const auto& g : base::split(s.gpus, ','))
      if (!g.empty()) gpus.insert(g);
    for (auto& w : pool_)
      if (w->idle() && w->host == s.host &&
          (std::any_of(s.core_ids.begin(), s.core_ids.end(), [&](int c) { return w->cores.count(c) > 0; }) ||
           std::any_of(gpus.begin(), gpus.end(),
                       [&](const std::string& g) { return w->gpus.count(g) > 0; }) ||
           s.core_ids.empty() || w->cores.empty()))
        w->retire();
    if (!s.warm) return std::make_unique<Process>(spawn(s, {}));
    auto w = std::make_shared<Worker>();
    w->dir = (std::filesystem::path(s.workers_dir) / ("w" + std::to_string(++workers_started_))).string();
    base::make_own_dir(s.workers_dir);  // never a link: its w<N> folders are emptied at the end
    w->pipes = run::make_worker_pipes(w->dir, s.req.ranks);
    w->key = key;
    w->host = s.host;
    w->cores.insert(s.core_ids.begin(), s.core_ids.end());
    w->gpus = gpus;
    w->job_id = s.job_id;
    w->ticket = run::new_worker_ticket();
    w->proc = spawn(s, {"--worker", w->dir}, {std::string(run::kWorkerTicketEnv) + "=" + w->ticket});
    pool_.push_back(w);
    return std::make_unique<WarmJob>(w, false);
  }

  std::vector<int> event_fds() const override {
    std::vector<int> fds;
    for (const auto& w : pool_)
      if (!w->job_id.empty() && w->pipes.done.open()) fds.push_back(w->pipes.done.fd());
    return fds;
  }

  std::string warm_worker_for(const LaunchSpec& s) const override {
    const auto w = s.warm ? idle_worker(worker_key(s)) : nullptr;
    return w ? "warm worker " + std::filesystem::path(w->dir).filename().string() + " (mpirun pid " +
                   std::to_string(w->proc.pid()) + ")"
             : "";
  }

  std::size_t retire_idle(double idle_s) override {
    const double now = base::unix_now();
    for (auto& w : pool_)
      if (idle_s >= 0 && w->idle() && now - w->idle_since >= idle_s) w->retire();
    // Reap the ended ones (a worker with a job is reaped by its job's try_wait).
    std::vector<std::shared_ptr<Worker>> alive;
    for (auto& w : pool_) {
      if (w->job_id.empty() && w->proc.try_wait()) {
        remove_dir(*w);
        continue;
      }
      alive.push_back(w);
    }
    pool_.swap(alive);
    return pool_.size();
  }

 private:
  // The worker's command without what is the job's own: workers with the same key run the same
  // processes, bound the same way.
  std::string worker_key(const LaunchSpec& s) const {
    LaunchSpec k = s;
    k.job_id = k.job_file = k.rankfile = k.heartbeat_file = k.log_out = k.log_err = "";
    k.resume = false;
    k.then_job_files.clear();
    std::string key = s.host + "|" + s.gpus + "|";
    for (int c : s.core_ids) key += std::to_string(c) + ",";
    for (const auto& a : command(k)) key += "|" + a;
    return key;
  }

  // The first idle worker started with the command `key` (worker_key), or none.
  std::shared_ptr<Worker> idle_worker(const std::string& key) const {
    for (const auto& w : pool_)
      if (w->idle() && w->key == key) return w;
    return nullptr;
  }

  // Only the pipes it made, never through a link (issue 57: remove_all of a `workers` link's
  // target's w1/ and w2/).
  static void remove_dir(const Worker& w) { base::remove_own_entries(w.dir, run::is_worker_pipe_name); }

  // `env`: set for this launch only (a warm worker's first ticket) besides the launch environment.
  base::Child spawn(const LaunchSpec& s, const std::vector<std::string>& extra,
                    const std::vector<std::string>& env = {}) {
    if (!s.core_ids.empty()) write_rankfile(s);
    base::SpawnOptions so;
    so.argv = command(s);
    so.argv.insert(so.argv.end(), extra.begin(), extra.end());
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

  std::vector<std::shared_ptr<Worker>> pool_;
  int workers_started_ = 0;
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
