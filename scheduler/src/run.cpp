// The run loop of `gridrun run`. See run.hpp for the sequence and docs/scheduler.md for the
// user-facing behaviour (idempotence, retries, Ctrl-C, crash recovery, phases).
#include "gridrun/scheduler/run.hpp"

#include <poll.h>
#include <signal.h>
#include <sys/signalfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <numeric>
#include <set>
#include <sstream>
#include <stdexcept>

#include "gridrun/jobs/grid.hpp"
#include "gridrun/jobs/job.hpp"
#include "gridrun/results/reader.hpp"
#include "gridrun/scheduler/executor.hpp"
#include "gridrun/scheduler/placement.hpp"
#include "json.hpp"

namespace fs = std::filesystem;

namespace gridrun::scheduler {

std::string default_train_bin() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    const fs::path cand = self.parent_path() / "gridrun-train";
    if (::access(cand.c_str(), X_OK) == 0) return cand.string();
  }
  return "gridrun-train";
}

namespace {

double now_unix() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

// Blocks the signals the run loop waits for and reads them from a signalfd; restores the previous
// mask on destruction. Why signalfd: one poll() waits for child exits, Ctrl-C and the UI tick,
// with no handler, no global flag and no sleep loop.
class SignalWaiter {
 public:
  SignalWaiter() {
    sigemptyset(&set_);
    for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&set_, s);
    if (sigprocmask(SIG_BLOCK, &set_, &old_) != 0) throw std::runtime_error("sigprocmask failed");
    fd_ = signalfd(-1, &set_, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd_ < 0) {
      sigprocmask(SIG_SETMASK, &old_, nullptr);
      throw std::runtime_error(std::string("signalfd: ") + std::strerror(errno));
    }
  }
  ~SignalWaiter() {
    ::close(fd_);
    sigprocmask(SIG_SETMASK, &old_, nullptr);
  }
  SignalWaiter(const SignalWaiter&) = delete;
  SignalWaiter& operator=(const SignalWaiter&) = delete;
  // Waits up to timeout_ms (-1: forever); returns the signals received (may be empty on timeout).
  std::vector<int> wait(int timeout_ms) {
    pollfd p{fd_, POLLIN, 0};
    int r = ::poll(&p, 1, timeout_ms);
    std::vector<int> sigs;
    if (r <= 0) return sigs;
    signalfd_siginfo si;
    while (::read(fd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si)) sigs.push_back(static_cast<int>(si.ssi_signo));
    return sigs;
  }

 private:
  sigset_t set_, old_;
  int fd_ = -1;
};

std::string read_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::invalid_argument(path + ": cannot read");
  std::ostringstream os;
  os << in.rdbuf();
  return os.str();
}

void write_text_atomic(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) throw std::runtime_error(path + ": cannot write");
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0)
    throw std::runtime_error(path + ": cannot write: " + std::strerror(errno));
}

bool finished_ok(const std::string& status) { return status == "completed" || status == "target_reached"; }

bool has_checkpoint(const std::string& dir) {
  std::error_code ec;
  return fs::is_directory(dir, ec) && !fs::is_empty(dir, ec);
}

std::string phase_of(const jobs::Job& job, const std::string& key) {
  if (key.empty()) return "";
  auto it = job.params.find(key);
  return it == job.params.end() ? "" : jobs::to_string(it->second);
}

// Previous wall time of the same job id when it completed before, else the cost model.
double estimate_for(const jobs::Job& job, const RunDir& rd, const CostModel& cost, bool* from_results) {
  *from_results = false;
  const std::string path = rd.result_file(job.id);
  std::error_code ec;
  if (fs::exists(path, ec) && finished_ok(results::job_status(path))) {
    try {
      results::ReadOptions ro;
      ro.tables = false;
      const auto data = results::read_job(path, ro);
      auto it = data.summary.find("wall_s");
      if (it != data.summary.end() && std::isfinite(it->second) && it->second > 0) {
        *from_results = true;
        return it->second;
      }
    } catch (const std::exception&) {
      // unreadable: fall back to the model
    }
  }
  return estimate_seconds(jobs::to_struct(job.params), cost);
}

std::string short_id(const std::string& id) { return id; }

// A damaged file is never trusted and never fatal: it is renamed out of the way (kept for a post
// mortem, and so that no reader trips over it again) and the job restarts or resumes without it.
void quarantine(const std::string& path, const std::string& why, std::ostream& out) {
  std::string to = path + ".damaged";
  std::error_code ec;
  for (int i = 1; fs::exists(to, ec); ++i) to = path + ".damaged" + std::to_string(i);
  fs::rename(path, to, ec);
  if (ec) throw std::runtime_error(path + ": damaged (" + why + ") and cannot be renamed to " + to + ": " + ec.message());
  out << "warning: " << path << " is damaged (" << why << "); moved to " << to << "\n" << std::flush;
}

// Why an existing results file cannot be trusted ("" when it opens and has a status).
std::string results_damage(const std::string& path) {
  try {
    results::ReadOptions ro;
    ro.tables = false;
    const auto data = results::read_job(path, ro);
    if (data.status.empty()) return "no status attribute";
    return "";
  } catch (const std::exception& e) {
    std::string w = e.what();
    for (char& c : w)
      if (c == '\n') c = ' ';
    return w.empty() ? "cannot be read" : w;
  }
}

}  // namespace

RunOutcome run_grid(const RunOptions& o, std::ostream& out) {
  // ---- validate everything before touching the disk -------------------------------------------
  if (o.retries < 0 || o.retries > 100) throw std::invalid_argument("--retries: must be in [0, 100]");
  if (!o.rerun.empty() && o.rerun != "failed" && o.rerun != "all")
    throw std::invalid_argument("--rerun: expected 'failed' or 'all', got '" + o.rerun + "'");
  make_placement(o.policy);  // throws on an unknown name
  const jobs::Expansion ex = jobs::load_grid(o.grid);
  if (!(o.exit_grace_s > 0)) throw std::invalid_argument("--exit-grace: must be > 0");
  if (o.heartbeat_timeout_s < 0) throw std::invalid_argument("--heartbeat-timeout: must be >= 0");
  // GPU sharing: each GPU becomes `slots` slots, the lcm of the jobs' jobs_per_gpu values.
  std::vector<int> share(ex.jobs.size(), 1);
  int slots = 1;
  for (std::size_t i = 0; i < ex.jobs.size(); ++i) {
    const auto& p = ex.jobs[i].params;
    if (auto it = p.find("jobs_per_gpu"); it != p.end())
      share[i] = static_cast<int>(std::get<std::int64_t>(it->second));
    if (request_for(ex.jobs[i]).gpus > 0) slots = std::lcm(slots, share[i]);
    if (slots > 64)
      throw std::invalid_argument("jobs_per_gpu: the grid's values need " + std::to_string(slots) +
                                  " slots per GPU (at most 64; use values that divide each other)");
  }
  if (slots > 1)
    for (std::size_t i = 0; i < ex.jobs.size(); ++i)
      if (request_for(ex.jobs[i]).gpus > 1)
        throw std::invalid_argument(
            "jobs_per_gpu: a grid that shares GPUs runs one-rank GPU jobs only, but job " +
            ex.jobs[i].id + " has ranks=" + std::to_string(request_for(ex.jobs[i]).ranks) +
            " on gpu (run multi-GPU jobs in another grid)");
  ResourceOptions res_opts = o.resources;
  res_opts.jobs_per_gpu = slots;
  const Cluster cluster = resolve_cluster(res_opts);
  check_feasible(ex.jobs, cluster);
  for (const auto& w : ex.warnings) out << "warning: " << w << "\n";

  RunDir rd(o.out + "/" + ex.name);
  RunOutcome res;
  res.run_dir = rd.root();
  res.total = ex.jobs.size();
  std::vector<std::string> phase(ex.jobs.size());
  std::vector<std::string> phase_order;
  for (std::size_t i = 0; i < ex.jobs.size(); ++i) {
    phase[i] = phase_of(ex.jobs[i], ex.compare_by);
    if (std::find(phase_order.begin(), phase_order.end(), phase[i]) == phase_order.end())
      phase_order.push_back(phase[i]);
  }
  std::vector<Request> req(ex.jobs.size());
  for (std::size_t i = 0; i < ex.jobs.size(); ++i) {
    req[i] = request_for(ex.jobs[i]);
    req[i].gpus *= slots / share[i];  // a whole GPU is `slots` slots
  }

  // ---- plan only --------------------------------------------------------------------------------
  if (o.dry_run || o.simulate) {
    std::vector<SimJob> sims(ex.jobs.size());
    std::size_t from_results = 0;
    for (std::size_t i = 0; i < ex.jobs.size(); ++i) {
      bool fr = false;
      sims[i].id = ex.jobs[i].id;
      sims[i].req = req[i];
      sims[i].duration_s = estimate_for(ex.jobs[i], rd, o.cost, &fr);
      sims[i].phase = phase[i];
      from_results += fr;
    }
    const SimResult sim = simulate(cluster, sims, SimOptions{o.policy, o.max_parallel});
    out << (o.dry_run ? "dry run" : "simulation") << " of " << ex.name << ": " << ex.jobs.size() << " jobs, policy "
        << o.policy << ", " << cluster.source << " (" << cluster.nodes.size() << " nodes, " << cluster.total_cores()
        << " cores, " << cluster.total_gpus() << " GPUs)\n"
        << "durations: " << from_results << " from previous results, " << (ex.jobs.size() - from_results)
        << " from the cost model (see docs/scheduler.md)\n";
    out << render_schedule(cluster, sims, sim, o.width, o.timeline_rows);
    if (o.dry_run && cluster.bindable) {
      auto exec = make_executor(o.executor);
      const std::string train = o.train_bin.empty() ? default_train_bin() : o.train_bin;
      out << "commands (first " << std::min<std::size_t>(3, ex.jobs.size()) << "):\n";
      for (std::size_t i = 0; i < ex.jobs.size() && i < 3; ++i) {
        LaunchSpec s;
        s.job_id = ex.jobs[i].id;
        s.job_file = rd.job_file(s.job_id);
        s.results_dir = rd.results_dir();
        s.rankfile = rd.rankfile(s.job_id);
        s.req = req[i];
        s.host = cluster.nodes[sim.placements[i].alloc.node].name;
        for (int c : sim.placements[i].alloc.cores) s.core_ids.push_back(cluster.nodes[sim.placements[i].alloc.node].cores[c]);
        s.train_bin = train;
        std::string line = "  ";
        for (const auto& a : exec->command(s)) line += a + " ";
        out << line << "\n";
      }
    }
    res.launched = false;
    res.exit_code = 0;
    return res;
  }

  // ---- real run -------------------------------------------------------------------------------
  if (!o.resources.cluster_file.empty())
    throw std::invalid_argument("--cluster describes other machines: use it with --simulate or --dry-run "
                                "(gridrun run launches on this machine; use `gridrun submit` for Slurm)");
  const std::string train = o.train_bin.empty() ? default_train_bin() : o.train_bin;
  if (train.find('/') != std::string::npos && ::access(train.c_str(), X_OK) != 0)
    throw std::invalid_argument("--train-bin: " + train + " is not an executable file");
  auto exec = make_executor(o.executor);

  rd.create_layout();
  RunLock lock(rd);
  const RunDir ard(fs::absolute(rd.root()).lexically_normal().string());  // absolute paths for the launcher
  write_text_atomic(rd.grid_copy(), read_text(o.grid));
  RunState state;
  try {
    state = rd.load_state();
  } catch (const std::exception& e) {
    // The results files decide what is finished; state.json only adds attempts and timings.
    quarantine(rd.state_file(), e.what(), out);
  }
  state.name = ex.name;

  // Jobs a crashed `gridrun run` left running: stop them (they checkpoint) before anything else,
  // so nothing ever runs twice.
  {
    std::vector<int> leftovers;
    for (const auto& job : ex.jobs)
      for (int p : processes_with_arg(ard.job_file(job.id))) leftovers.push_back(p);
    if (!leftovers.empty()) {
      out << "reconcile: " << leftovers.size() << " processes of an earlier gridrun still run jobs of "
          << ex.name << "; stopping them (they checkpoint)\n" << std::flush;
      terminate_processes(leftovers, 120.0);
    }
  }

  std::vector<char> todo(ex.jobs.size(), 0), resume(ex.jobs.size(), 0);
  for (std::size_t i = 0; i < ex.jobs.size(); ++i) {
    const jobs::Job& job = ex.jobs[i];
    JobRecord& rec = state.jobs[job.id];
    rec.id = job.id;
    rec.phase = phase[i];
    jobs::Job plain = job;
    plain.meta["phase"] = phase[i];
    std::error_code fec;
    if (fs::exists(rd.job_file(job.id), fec)) {
      try {
        jobs::read_job_file(rd.job_file(job.id));
      } catch (const std::exception& e) {
        quarantine(rd.job_file(job.id), e.what(), out);
        jobs::write_job_file(rd.job_file(job.id), plain);
      }
    }
    // A damaged results file (final or .partial) has lost the job's history, which no checkpoint
    // holds: the job restarts from scratch so that its results are those of an undisturbed run.
    bool restart = false;
    for (const std::string& f : {rd.result_file(job.id), rd.result_file(job.id) + ".partial"}) {
      if (!fs::exists(f, fec)) continue;
      const std::string why = results_damage(f);
      if (why.empty()) continue;
      quarantine(f, why, out);
      restart = true;
    }
    // Its checkpoints continue that lost history; a retry must not resume from them either.
    if (restart) fs::remove_all(rd.checkpoint_dir(job.id), fec);
    const std::string status = results::job_status(rd.result_file(job.id));
    if (o.rerun == "all") {
      todo[i] = 1;
    } else if (finished_ok(status)) {
      rec.state = status == "completed" ? JobState::Completed : JobState::TargetReached;
      ++res.skipped;
      continue;
    } else {
      todo[i] = 1;
      resume[i] = !restart && !(o.rerun == "failed" && rec.state == JobState::Failed) &&
                  has_checkpoint(rd.checkpoint_dir(job.id));
    }
    if (rec.state == JobState::Running || rec.state == JobState::Completed || rec.state == JobState::TargetReached)
      rec.state = JobState::Interrupted;  // a crash left it running, or its results file is gone
    if (o.rerun == "all") rec.state = JobState::Pending;
    jobs::write_job_file(rd.job_file(job.id), plain);
  }
  rd.save_state(state);

  std::size_t n_todo = 0;
  for (char t : todo) n_todo += t;
  out << "run " << ex.name << ": " << ex.jobs.size() << " jobs (" << res.skipped << " already completed, " << n_todo
      << " to run), policy " << o.policy << ", " << cluster.source << ": " << cluster.total_cores() << " cores, "
      << cluster.total_gpus() << " GPUs -> " << rd.root() << "\n" << std::flush;

  SignalWaiter signals;
  const auto t0 = std::chrono::steady_clock::now();
  auto elapsed = [&] { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(); };
  bool stopping = false, killing = false;
  std::size_t done = res.skipped, failed = 0, pending = n_todo, running_n = 0;
  double finished_time = 0;
  std::size_t finished_count = 0;
  std::string last_status;

  auto status_line = [&]() {
    std::ostringstream s;
    s << "done " << done << "/" << ex.jobs.size() << "  running " << running_n << "  failed " << failed << "  pending "
      << pending << "  elapsed " << format_duration(elapsed());
    if (finished_count > 0 && (pending + running_n) > 0) {
      const double mean = finished_time / static_cast<double>(finished_count);
      const double eta = mean * static_cast<double>(pending + running_n) / static_cast<double>(std::max<std::size_t>(1, running_n));
      s << "  ETA " << format_duration(eta);
    }
    if (stopping) s << (killing ? "  (killing)" : "  (stopping)");
    std::string line = s.str();
    if (static_cast<int>(line.size()) > o.width - 1) line.resize(static_cast<std::size_t>(std::max(10, o.width - 1)));
    return line;
  };
  auto event = [&](const std::string& what) {
    char stamp[32];
    std::snprintf(stamp, sizeof stamp, "[%7.1fs] ", elapsed());
    if (o.tty) out << "\r\033[K";
    out << stamp << what;
    if (!o.tty) out << "  (" << done << " done, " << running_n << " running, " << failed << " failed, " << pending << " pending)";
    out << "\n";
    if (o.tty) out << status_line();
    out << std::flush;
  };

  for (const std::string& ph : phase_order) {
    if (stopping) break;
    std::vector<std::size_t> members;
    for (std::size_t i = 0; i < ex.jobs.size(); ++i)
      if (phase[i] == ph && todo[i]) members.push_back(i);
    if (members.empty()) continue;
    if (!ex.compare_by.empty()) event("phase " + ex.compare_by + "=" + ph + ": " + std::to_string(members.size()) + " jobs");

    Engine engine(cluster, EngineOptions{o.policy, o.max_parallel});
    std::vector<double> est(ex.jobs.size(), 0);
    std::map<std::size_t, int> tries;  // attempts in this invocation
    for (std::size_t i : members) {
      bool fr = false;
      est[i] = estimate_for(ex.jobs[i], rd, o.cost, &fr);
      engine.submit(QueuedJob{i, i, req[i], est[i]});
    }
    struct Live {
      std::unique_ptr<RunningJob> proc;
      double start;
      double final_seen = -1;  // when its results file was first seen final (watchdog)
      int forced_code = -1;    // the watchdog ended it: the exit code to record instead
    };
    std::map<std::size_t, Live> live;
    const double phase_t0 = elapsed();
    double busy = 0;  // allocated resource-seconds (GPUs for gpu clusters, else cores)
    const bool gpu_cluster = cluster.total_gpus() > 0;

    auto finish = [&](std::size_t i, int code) {
      const jobs::Job& job = ex.jobs[i];
      JobRecord& rec = state.jobs[job.id];
      const double dur = elapsed() - live[i].start;
      busy += dur * (gpu_cluster ? req[i].gpus : req[i].cores);
      live.erase(i);
      engine.finish(i);
      --running_n;
      rec.exit_codes.push_back(code);
      rec.end_unix = now_unix();
      const std::string status = results::job_status(rd.result_file(job.id));
      std::ostringstream what;
      if (code == 0 && finished_ok(status)) {
        rec.state = status == "completed" ? JobState::Completed : JobState::TargetReached;
        ++done;
        finished_time += dur;
        ++finished_count;
        what << "done    " << short_id(job.id) << " " << status << " in " << format_duration(dur);
      } else {
        // A job we asked to stop is interrupted whatever its code (it may have been killed before
        // its ranks could checkpoint); the next run resumes or restarts it.
        const bool interrupted = code == kExitInterrupted || stopping;
        rec.state = interrupted ? JobState::Interrupted : JobState::Failed;
        const int used = tries[i];
        if (!stopping && used <= o.retries) {
          resume[i] = has_checkpoint(rd.checkpoint_dir(job.id));
          engine.submit(QueuedJob{i, i, req[i], est[i]});
          ++pending;
          what << "retry   " << short_id(job.id) << " exit " << code << (code == 0 ? " without a finished results file" : "")
               << ", attempt " << used + 1 << " of " << o.retries + 1 << (resume[i] ? " (--resume)" : "")
               << "; see " << rd.log_err(job.id);
        } else {
          if (!interrupted || !stopping) ++failed;
          what << (interrupted ? "stopped " : "failed  ") << short_id(job.id) << " exit " << code << "; see "
               << rd.log_err(job.id);
        }
      }
      rd.save_state(state);
      event(what.str());
    };

    auto launch_ready = [&]() {
      if (stopping) return;
      for (auto& s : engine.schedule(elapsed())) {
        const std::size_t i = s.key;
        jobs::Job job = ex.jobs[i];
        const Node& node = cluster.nodes[s.alloc.node];
        const std::string host = node.name;
        job.meta["cores"] = cores_string(cluster, s.alloc);
        job.meta["gpus"] = gpus_string(cluster, s.alloc);
        job.meta["host"] = host;
        job.meta["phase"] = phase[i];
        jobs::write_job_file(rd.job_file(job.id), job);
        JobRecord& rec = state.jobs[job.id];
        rec.state = JobState::Running;
        rec.attempts += 1;
        rec.start_unix = now_unix();
        rec.cores = job.meta["cores"];
        rec.gpus = job.meta["gpus"];
        rec.host = host;
        tries[i] += 1;
        --pending;

        LaunchSpec spec;
        spec.job_id = job.id;
        spec.job_file = ard.job_file(job.id);
        spec.results_dir = ard.results_dir();
        spec.log_out = ard.log_out(job.id);
        spec.log_err = ard.log_err(job.id);
        spec.rankfile = ard.rankfile(job.id);
        spec.req = req[i];
        spec.host = host;
        if (cluster.bindable)
          for (int c : s.alloc.cores) spec.core_ids.push_back(node.cores[c]);
        else
          spec.oversubscribe = true;
        spec.gpus = job.meta["gpus"];
        spec.resume = resume[i] != 0;
        spec.train_bin = train;
        spec.heartbeat_file = ard.log_out(job.id) + ".heartbeat";
        std::remove(spec.heartbeat_file.c_str());  // a stale one must not count for this attempt
        if (req[i].gpus > 0 && share[i] > 1) spec.gpu_memory_fraction = 1.0 / share[i];
        spec.owner_pid = static_cast<int>(::getpid());
        {
          // One header per attempt in both logs, so appended attempts can be told apart.
          std::string cmd;
          for (const auto& a : exec->command(spec)) cmd += a + " ";
          const std::string hdr = "=== gridrun attempt " + std::to_string(rec.attempts) + " at " +
                                  std::to_string(static_cast<long long>(rec.start_unix)) + ": " + cmd + "\n";
          for (const auto& p : {spec.log_out, spec.log_err}) {
            std::ofstream lg(p, std::ios::app);
            lg << hdr;
          }
        }
        rd.save_state(state);
        ++running_n;
        live[i] = Live{nullptr, elapsed()};
        try {
          live[i].proc = exec->launch(spec);
        } catch (const std::exception& e) {
          std::ofstream(spec.log_err, std::ios::app) << "gridrun: " << e.what() << "\n";
          finish(i, 127);
          continue;
        }
        std::ostringstream what;
        what << "start   " << short_id(job.id) << " " << describe(request_for(job))
             << (share[i] > 1 ? ", GPU shared by up to " + std::to_string(share[i]) + " jobs" : std::string()) << " on " << host << " cores "
             << rec.cores;
        if (!rec.gpus.empty()) what << " gpus " << rec.gpus;
        if (spec.resume) what << " (--resume)";
        event(what.str());
      }
    };

    // Nothing may hang a run unnoticed. (1) Results final but processes still there after
    // exit_grace_s (a trainer stuck in CUDA/NCCL/MPI teardown): the job's work is done, so its
    // processes are ended and it is recorded as its results say, with a warning. (2) Rank 0's
    // heartbeat file older than heartbeat_timeout_s (a hung rank stops every rank at the next
    // collective): ended, recorded failed with that reason (and retried like any failure).
    auto watchdog = [&](const std::vector<std::pair<std::size_t, int>>& ended) {
      const double t = elapsed();
      for (auto& [i, l] : live) {
        if (!l.proc || l.forced_code >= 0) continue;
        if (std::any_of(ended.begin(), ended.end(), [&](const auto& e) { return e.first == i; }))
          continue;
        const jobs::Job& job = ex.jobs[i];
        std::string why;
        if (::access(rd.result_file(job.id).c_str(), F_OK) == 0) {
          if (l.final_seen < 0) l.final_seen = t;
          if (t - l.final_seen < o.exit_grace_s) continue;
          l.forced_code = 0;
          why = "results are final but its processes had not exited " +
                format_duration(o.exit_grace_s) + " later; ended them (recorded as its results say)";
        } else if (o.heartbeat_timeout_s > 0 && t - l.start > o.heartbeat_timeout_s) {
          struct stat hb {};
          const std::string f = rd.log_out(job.id) + ".heartbeat";
          const double age = ::stat(f.c_str(), &hb) == 0
                                 ? static_cast<double>(std::time(nullptr) - hb.st_mtime)
                                 : t - l.start;
          if (age <= o.heartbeat_timeout_s) continue;
          l.forced_code = kExitNoHeartbeat;
          why = "no heartbeat from rank 0 for " + format_duration(age) + " (--heartbeat-timeout " +
                format_duration(o.heartbeat_timeout_s) + "): a rank hung; ended the job";
        } else {
          continue;
        }
        std::ofstream(rd.log_err(job.id), std::ios::app) << "gridrun: watchdog: " << why << "\n";
        event("warning " + short_id(job.id) + ": " + why);
        l.proc->kill();
      }
    };

    launch_ready();
    while (!live.empty() || (!stopping && engine.pending() > 0)) {
      if (live.empty()) break;  // cannot happen: feasible jobs always start on an idle machine
      const auto sigs = signals.wait(1000);  // the watchdog below needs a tick
      for (int sig : sigs) {
        if (sig == SIGCHLD) continue;
        if (!stopping) {
          stopping = true;
          event("interrupt: no new jobs; asking " + std::to_string(live.size()) +
                " running jobs to checkpoint and stop (again to kill)");
          for (auto& kv : live)
            if (kv.second.proc) kv.second.proc->interrupt();
        } else if (!killing) {
          killing = true;
          event("second interrupt: killing running jobs");
          for (auto& kv : live)
            if (kv.second.proc) kv.second.proc->kill();
        }
      }
      std::vector<std::pair<std::size_t, int>> ended;
      for (auto& kv : live)
        if (kv.second.proc)
          if (auto code = kv.second.proc->try_wait())
            ended.emplace_back(kv.first, kv.second.forced_code >= 0 ? kv.second.forced_code : *code);
      if (!killing) watchdog(ended);
      for (const auto& e : ended) finish(e.first, e.second);
      launch_ready();
      if (o.tty) {
        out << "\r\033[K" << status_line() << std::flush;
      }
    }
    if (stopping) break;
    if (!ex.compare_by.empty()) {
      const double makespan = elapsed() - phase_t0;
      double samples = 0, util_sum = 0;
      int util_n = 0;
      json::Value fig = json::Value::object();
      json::Value ids = json::Value::array();
      for (std::size_t i : members) {
        ids.arr.push_back(json::Value::string(ex.jobs[i].id));
        try {
          results::ReadOptions ro;
          ro.tables = false;
          const auto data = results::read_job(rd.result_file(ex.jobs[i].id), ro);
          if (auto it = data.summary.find("samples"); it != data.summary.end() && std::isfinite(it->second))
            samples += it->second;
          const char* key = req[i].gpus > 0 ? "gpu_util_pct_mean" : "cpu_util_pct_mean";
          if (auto it = data.summary.find(key); it != data.summary.end() && std::isfinite(it->second)) {
            util_sum += it->second / 100.0;
            ++util_n;
          }
        } catch (const std::exception&) {
          // a failed job has no figures; the phase still records its makespan
        }
      }
      const double cap = gpu_cluster ? cluster.total_gpus() : cluster.total_cores();
      const double alloc_util = makespan > 0 && cap > 0 ? busy / (cap * makespan) : 0;
      fig.set("makespan_s", json::Value::number(makespan));
      fig.set("samples_per_s", json::Value::number(makespan > 0 ? samples / makespan : 0));
      fig.set("util_mean", json::Value::number(util_n > 0 ? util_sum / util_n : alloc_util));
      fig.set("alloc_util", json::Value::number(alloc_util));
      fig.set("samples", json::Value::number(samples));
      fig.set("jobs", std::move(ids));
      state.phases_json[ph] = json::dump(fig);
      rd.save_state(state);
      event("phase " + ex.compare_by + "=" + ph + " done: makespan " + format_duration(makespan));
    }
  }
  if (o.tty) out << "\r\033[K";

  res.launched = true;
  res.interrupted = stopping;
  res.completed = 0;
  res.failed = 0;
  for (const auto& job : ex.jobs) {
    const JobState s = state.jobs[job.id].state;
    if (s == JobState::Completed || s == JobState::TargetReached) ++res.completed;
    else if (s == JobState::Failed) ++res.failed;
  }
  rd.save_state(state);
  out << (stopping ? "interrupted: " : "finished: ") << res.completed << "/" << res.total << " completed, "
      << res.failed << " failed" << (stopping ? "; run the same command again to resume" : "") << " ("
      << format_duration(elapsed()) << ")\n" << std::flush;
  res.exit_code = res.completed == res.total ? 0 : 1;
  return res;
}

}  // namespace gridrun::scheduler
