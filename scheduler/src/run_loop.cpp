// The run loop of `gridrun run`; see run_loop.hpp for its shape and docs/scheduler.md for the
// behaviour (idempotence, retries, Ctrl-C, crash recovery, watchdog, phases).
#include "run_loop.hpp"

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
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <utility>

#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/host.hpp"
#include "gridrun/base/json.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/jobs/footprint.hpp"
#include "gridrun/jobs/job.hpp"
#include "gridrun/results/reader.hpp"
#include "gridrun/results/run_reader.hpp"
#include "gridrun/run/failure.hpp"
#include "gridrun/run/prepare.hpp"
#include "launch_spec.hpp"

namespace fs = std::filesystem;

namespace gridrun::scheduler {

namespace {

// Blocks the signals the run loop waits for and reads them from a signalfd; restores the previous
// mask on destruction. Why signalfd: one poll() waits for child exits, Ctrl-C and the UI tick,
// with no handler, no global flag and no sleep loop.
class SignalWaiter {
 public:
  SignalWaiter() {
    sigemptyset(&set_);
    for (int s : {SIGCHLD, SIGINT, SIGTERM, SIGHUP}) sigaddset(&set_, s);
    if (pthread_sigmask(SIG_BLOCK, &set_, &old_) != 0) throw std::runtime_error("pthread_sigmask failed");
    fd_ = signalfd(-1, &set_, SFD_NONBLOCK | SFD_CLOEXEC);
    if (fd_ < 0) {
      pthread_sigmask(SIG_SETMASK, &old_, nullptr);
      throw std::runtime_error(std::string("signalfd: ") + base::errno_text(errno));
    }
  }
  ~SignalWaiter() {
    ::close(fd_);
    pthread_sigmask(SIG_SETMASK, &old_, nullptr);
  }
  SignalWaiter(const SignalWaiter&) = delete;
  SignalWaiter& operator=(const SignalWaiter&) = delete;
  // Waits up to timeout_ms (-1: forever) for a signal or for one of `fds` to become readable;
  // returns the signals received (may be empty on timeout or when only an fd woke it).
  std::vector<int> wait(int timeout_ms, const std::vector<int>& fds = {}) {
    std::vector<pollfd> ps{{fd_, POLLIN, 0}};
    for (int f : fds) ps.push_back({f, POLLIN, 0});
    const int r = ::poll(ps.data(), ps.size(), timeout_ms);
    std::vector<int> sigs;
    if (r <= 0) return sigs;
    signalfd_siginfo si;
    while (::read(fd_, &si, sizeof si) == static_cast<ssize_t>(sizeof si))
      sigs.push_back(static_cast<int>(si.ssi_signo));
    return sigs;
  }

 private:
  sigset_t set_, old_;
  int fd_ = -1;
};

bool has_checkpoint(const std::string& dir) {
  std::error_code ec;
  return fs::is_directory(dir, ec) && !fs::is_empty(dir, ec);
}

// Appends to a job's log, never through a link (base::open_log_for_append: a link or a FIFO in its
// place is replaced; issue 57). Returns a warning to show, naming the file ("" when none).
std::string append_line(const std::string& path, const std::string& line) {
  std::string replaced;
  try {
    const base::UniqueFd fd = base::open_log_for_append(path, base::kinds::kJobLog, replaced);
    for (std::size_t done = 0; done < line.size();) {
      const ssize_t n = ::write(fd.get(), line.data() + done, line.size() - done);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return path + ": cannot write: " + base::errno_text(errno);
      done += static_cast<std::size_t>(n);
    }
  } catch (const std::exception& e) {
    return e.what();
  }
  return replaced;
}

}  // namespace

namespace {
// The index read measured_wall needs: each job's status and its wall_s, no other figure.
results::FolderReadOptions wall_read_options() {
  results::FolderReadOptions fo;
  fo.depth = results::Depth::Summary;
  fo.summary_keys = {"wall_s"};
  return fo;
}

// wall_s of a finished job's record, when it has a usable one.
std::optional<double> measured_wall(const results::JobData& d) {
  if (!run::is_finished(run::outcome_from_results(d.status))) return std::nullopt;
  auto it = d.summary.find("wall_s");
  if (it == d.summary.end() || !std::isfinite(it->second) || it->second <= 0) return std::nullopt;
  return it->second;
}
}  // namespace

Durations measured_durations(results::ResultsFolder& folder, const std::vector<jobs::Job>& jobs) {
  std::vector<std::string> names;
  names.reserve(jobs.size());
  for (const auto& j : jobs) names.push_back(run::RunDir::result_file_name(j.id));
  Durations out;
  for (const auto& r : folder.read(names, wall_read_options()))
    if (r.ok)
      if (auto w = measured_wall(r.data))
        out[r.data.id.empty() ? r.name.substr(0, r.name.size() - 3) : r.data.id] = *w;
  return out;
}

double estimate_for(const jobs::Job& job, const Durations& measured, const CostModel& cost,
                    bool* from_results) {
  auto it = measured.find(job.id);
  *from_results = it != measured.end();
  return *from_results ? it->second : estimate_seconds(job.params, cost);
}

// A running job of the current phase.
struct RunLoop::Live {
  std::unique_ptr<RunningJob> proc;
  double start = 0;
  double final_seen = -1;  // when its results file was first seen final (watchdog)
  int forced_code = -1;    // the watchdog ended it: the exit code to record instead
  bool warm = false;       // it ran in a warm worker that ran another job before
};

// One phase (all jobs when there is no compare-by): its own engine, so that phases never overlap.
struct RunLoop::PhaseRun {
  PhaseRun(const Cluster& c, const EngineOptions& eo) : engine(c, eo) {}
  Engine engine;
  std::vector<std::size_t> members;
  std::map<std::size_t, double> est;
  std::map<std::size_t, int> tries;  // attempts in this invocation
  std::map<std::size_t, Live> live;
  double t0 = 0;
  double busy = 0;         // allocated resource-seconds (GPUs on a GPU cluster, else cores)
  std::size_t peak = 0;    // most jobs running at once
  base::CpuSnapshot cpu0;  // at its start: what else used the machine while it ran (close_phase)
};

RunLoop::RunLoop(const GridPlan& plan, const RunOptions& opts, std::string train_bin, std::ostream& out)
    : plan_(plan),
      ex_(plan.ex),
      o_(opts),
      train_(std::move(train_bin)),
      sitting_("run-" + std::to_string(static_cast<long long>(base::unix_now() * 1000)) + "-" +
               std::to_string(::getpid())),
      out_(out),
      rd_(run::RunDir::for_grid(opts.out, plan.ex.name)),
      ard_(fs::absolute(rd_.root()).lexically_normal().string()),
      exec_(make_executor(opts.executor)),
      pool_(*exec_),
      idle_places_([this](std::size_t i) { return jobs::process_key(ex_.jobs[i].params).text(); }),
      prepared_(run::prepare_run(rd_, plan.whole.jobs.empty() ? plan.ex : plan.whole,
                                 run::PrepareOptions{opts.grid, /*lock=*/true, /*slurm_dir=*/false,
                                                     run::override_texts(opts.overrides), opts.repeats},
                                 out)),
      state_(prepared_.state),
      records_(run::records_of(state_, plan.ex.jobs)),
      to_run_(plan.ex.jobs.size(), 0),
      resume_(plan.ex.jobs.size(), 0),
      cold_(plan.ex.jobs.size(), 0) {}

RunLoop::~RunLoop() = default;

RunOutcome RunLoop::run() {
  stop_leftovers();
  reconcile();
  std::size_t n_to_run = 0;
  for (char t : to_run_) n_to_run += t;
  const Cluster& cluster = plan_.cluster;
  out_ << "run " << ex_.name << ": " << ex_.jobs.size() << " jobs (" << skipped_ << " already completed, "
       << n_to_run << " to run), policy " << o_.policy << ", " << cluster.source << ": "
       << cluster.total_cores() << " cores, " << cluster.gpus_text() << " -> " << rd_.root() << "\n"
       << std::flush;

  SignalWaiter signals;
  progress_ = std::make_unique<Progress>(out_, o_.tty, o_.width, ex_.jobs.size());
  progress_->counts().done = skipped_;
  progress_->counts().pending = n_to_run;
  for (const std::string& value : plan_.phase_order) {
    if (stopping_) break;
    if (!open_phase(value)) continue;
    launch_ready();
    while (!phase_->live.empty()) {  // feasible jobs always start on an idle machine
      const auto sigs = signals.wait(1000, pool_.event_fds());  // the watchdog below needs a tick
      for (int sig : sigs)
        if (sig != SIGCHLD) on_signal();
      std::vector<std::pair<std::size_t, int>> ended;
      for (auto& [i, l] : phase_->live)
        if (l.proc)
          if (auto code = l.proc->try_wait())
            ended.emplace_back(i, l.forced_code >= 0 ? l.forced_code : *code);
      if (!killing_) watchdog(ended);
      for (const auto& [i, code] : ended) on_exit(i, code);
      launch_ready();
      pool_.retire_idle(o_.worker_idle_s);
      progress_->redraw();
    }
    if (stopping_) break;
    if (!ex_.compare_by.empty()) close_phase(value);
  }
  progress_->clear();
  pool_.retire_idle(0);  // warm workers leave now, not at their idle time
  folder_->flush();
  RunOutcome res = summary();
  res.to_run = n_to_run;
  return res;
}

// A new engine with the phase's jobs to run; false when it has none.
bool RunLoop::open_phase(const std::string& value) {
  phase_ = std::make_unique<PhaseRun>(plan_.cluster, EngineOptions{o_.policy, o_.max_parallel});
  PhaseRun& ph = *phase_;
  for (std::size_t i = 0; i < ex_.jobs.size(); ++i)
    if (plan_.phase[i] == value && to_run_[i]) ph.members.push_back(i);
  if (ph.members.empty()) return false;
  if (!ex_.compare_by.empty())
    progress_->event("phase " + run::phase_label(ex_.compare_by, value) + ": " +
                     std::to_string(ph.members.size()) + " jobs");
  for (std::size_t i : ph.members) {
    bool from_results = false;
    ph.est[i] = estimate_for(ex_.jobs[i], measured_, plan_.cost, &from_results);
    ph.engine.submit(QueuedJob{i, i, plan_.req[i], ph.est[i]});
  }
  ph.t0 = progress_->elapsed();
  ph.cpu0 = base::cpu_snapshot();
  return true;
}

// Jobs a crashed `gridrun run` left running (a SIGKILL of gridrun and mpirun leaves ranks behind,
// executor.cpp): stop them (they checkpoint) before anything else, so nothing ever runs twice. They
// are found by what the last sitting recorded, never by their arguments (any process may name a
// job file: a stranger's `tail -f` of one was killed that way, issue 45): the launch token it put
// into the environment of everything it launched (run_dir.hpp), with this run directory, in
// processes of our own user. No other gridrun can be running here (we hold the lock), so every one
// found is a leftover. Then this sitting's own token, for the next one to find ours.
void RunLoop::stop_leftovers() {
  std::error_code ec;
  fs::path dir = fs::weakly_canonical(ard_.root(), ec);
  if (ec) dir = ard_.root();
  const std::string dir_env = std::string(run::kRunDirEnv) + "=" + dir.string();
  if (const std::string token = rd_.launch_token(); !token.empty()) {
    const auto leftovers =
        base::own_processes_with_env({std::string(run::kLaunchTokenEnv) + "=" + token, dir_env});
    if (!leftovers.empty()) {
      out_ << "reconcile: " << leftovers.size() << " processes of an earlier gridrun still run jobs of "
           << ex_.name << "; stopping them (they checkpoint)\n"
           << std::flush;
      terminate_processes(leftovers, 120.0);
    }
  }
  exec_->set_launch_env({std::string(run::kLaunchTokenEnv) + "=" + rd_.renew_launch_token(), dir_env});
}

// The results files decide what is finished; everything else runs (again), resuming from its
// checkpoint where that is sound.
void RunLoop::reconcile() {
  // Every results file of the grid read once (one guarded child; the index answers for files
  // unchanged since a command last read them). The verdict is the reports' verdict (run_reader.hpp):
  // what `report` cannot read is quarantined and redone here.
  folder_ = std::make_unique<results::ResultsFolder>(rd_.results_dir());
  // Only the files that exist, from one listing of results/ (a stat of each job's final and
  // .partial file was 200,000 path lookups at 100,000 jobs), each name taken back to its job.
  std::unordered_map<std::string_view, std::size_t> job_of;
  job_of.reserve(ex_.jobs.size());
  for (std::size_t i = 0; i < ex_.jobs.size(); ++i) job_of.emplace(ex_.jobs[i].id, i);
  std::vector<std::string> names;
  std::vector<std::pair<std::size_t, bool>> owner;  // per name: its job, and whether a .partial
  if (auto listed = base::list_folder(rd_.results_dir()))
    for (std::string& name : *listed) {
      const std::optional<std::string> id = run::RunDir::job_id_of_results_file(name);
      const auto it = id ? job_of.find(*id) : job_of.end();
      if (it == job_of.end()) continue;
      owner.emplace_back(it->second, run::RunDir::is_partial_file(name));
      names.push_back(std::move(name));
    }
  results::FolderReadStats stats;
  disk_ = folder_->read(names, wall_read_options(), &stats);
  disk_of_.assign(ex_.jobs.size(), {kNoRead, kNoRead});
  for (std::size_t k = 0; k < owner.size(); ++k) disk_of_[owner[k].first][owner[k].second ? 1 : 0] = k;
  // Anything read afresh (a changed file, a live .partial, no index) may be news to results.h5.
  fresh_reads_ = stats.read > 0 || stats.index_rebuilt;
  for (std::size_t i = 0; i < ex_.jobs.size(); ++i) reconcile_job(i);
  disk_.clear();
  disk_of_.clear();
  save_state();
  folder_->flush();
}

void RunLoop::save_state() {
  if (prepared_.on_disk) {
    if (*prepared_.on_disk == state_) return;
    prepared_.on_disk.reset();
  }
  rd_.save_state(state_);
}

void RunLoop::reconcile_job(std::size_t i) {
  const jobs::Job& job = ex_.jobs[i];
  run::JobRecord& rec = *records_[i];
  // A damaged results file (final or .partial) has lost the job's history, which no checkpoint
  // holds: the job restarts from scratch so that its results are those of an undisturbed run.
  bool restart = false;
  std::error_code ec;
  std::string final_status;
  for (const bool partial : {false, true}) {
    const std::size_t k = disk_of_[i][partial ? 1 : 0];
    if (k == kNoRead || disk_[k].missing) continue;
    const results::JobFileRead& r = disk_[k];
    if (r.ok) {
      if (!partial) {
        final_status = r.data.status;
        if (auto w = measured_wall(r.data)) measured_[job.id] = *w;
      }
      continue;
    }
    // The reader's message starts with the path, which run::quarantine_damaged names itself.
    const std::string& f = r.path;
    std::string why = r.error;
    if (why.rfind(f + ": ", 0) == 0) why.erase(0, f.size() + 2);
    run::quarantine_damaged(f, why, out_);
    restart = true;
  }
  // Its checkpoints continue that lost history; a retry must not resume from them either.
  if (restart) fs::remove_all(rd_.checkpoint_dir(job.id), ec);
  const run::JobOutcome disk = run::outcome_from_results(final_status);
  // --rerun all, --rerun compare (every phase again, in this one sitting: phases measured apart
  // under different load) or --rerun phase=V for the jobs of phase V: from scratch, whatever is on
  // disk.
  const bool again =
      o_.rerun == "all" || (o_.rerun == "compare" && !plan_.phase[i].empty()) ||
      (o_.rerun.rfind("phase=", 0) == 0 && (o_.rerun.substr(6) == plan_.phase[i] ||
                                            o_.rerun.substr(6) == run::split_phase(plan_.phase[i]).value));
  // (A fresh start writes a new file: its /attempts hold this sitting's only.)
  if (!again && run::is_finished(disk)) {
    rec.state = disk;
    ++skipped_;
    return;
  }
  // A diverged job would diverge again (same seed, same lr): only --rerun failed/all runs it.
  if (!again && disk == run::JobOutcome::Diverged && o_.rerun != "failed") {
    rec.state = disk;
    return;
  }
  to_run_[i] = 1;
  resume_[i] =
      static_cast<char>(!again && !restart && !(o_.rerun == "failed" && run::is_failure(rec.state)) &&
                        has_checkpoint(rd_.checkpoint_dir(job.id)));
  if (rec.state == run::JobOutcome::Running || run::is_finished(rec.state))
    rec.state = run::JobOutcome::Interrupted;  // a crash left it running, or its results file is gone
  if (again) rec.state = run::JobOutcome::Pending;
  jobs::write_job_file(rd_.job_file(job.id), run::with_phase(job, plan_.phase[i]));
}

void RunLoop::launch_ready() {
  if (stopping_) return;
  // A job goes where an idle worker of its process waits, when that is free (idle_places.hpp).
  pool_.offer_idle(idle_places_);
  phase_->engine.set_preference(idle_places_.size() > 0 ? &idle_places_ : nullptr);
  for (const Start& s : phase_->engine.schedule(progress_->elapsed())) launch(s);
}

// Starts one placed job: job file with its placement, state, log headers, then the launcher.
void RunLoop::launch(const Start& s) {
  const std::size_t i = s.key;
  const Cluster& cluster = plan_.cluster;
  jobs::Job job = ex_.jobs[i];
  const Node& node = cluster.nodes[s.alloc.node];
  run::JobRecord& rec = *records_[i];
  rec.state = run::JobOutcome::Running;
  rec.attempts += 1;
  rec.start_unix = base::unix_now();
  rec.cores = cores_string(cluster, s.alloc);
  rec.gpus = gpus_string(cluster, s.alloc);
  rec.host = node.name;
  job.meta["cores"] = rec.cores;
  job.meta["gpus"] = rec.gpus;
  job.meta["host"] = rec.host;
  job.meta["phase"] = plan_.phase[i];
  job.meta["sitting"] = sitting_;
  jobs::write_job_file(rd_.job_file(job.id), job);
  phase_->tries[i] += 1;
  --progress_->counts().pending;

  LaunchSpec spec = launch_spec_for(
      job.id, LaunchPlace{ard_, cluster, s.alloc, plan_.req[i], jobs::process_key(job.params).text()});
  spec.resume = resume_[i] != 0;
  spec.heartbeat_file = ard_.heartbeat_file(job.id);
  std::remove(spec.heartbeat_file.c_str());  // a stale one must not count for this attempt
  const int share = plan_.share[i];
  if (spec.req.gpus > 0 && share > 1) spec.gpu_memory_fraction = 1.0 / share;
  spec.warm = o_.launch == run::Launch::Warm && !cold_[i];
  // A command job (issue 56): gridrun-exec, cold, with a MASTER_PORT of its own (set_program).
  if (const std::string why = set_program(spec, job.params, train_, default_exec_bin()); !why.empty())
    progress_->event("warning " + job.id + ": " + why);
  // One header per attempt in both logs, so appended attempts can be told apart.
  std::string cmd = pool_.idle_worker_for(spec);
  if (!cmd.empty())
    cmd += ": " + spec.job_file + (spec.resume ? " --resume " : " ");
  else
    for (const auto& a : exec_->command(spec)) cmd += a + " ";
  const std::string hdr = "=== gridrun attempt " + std::to_string(rec.attempts) + " at " +
                          std::to_string(static_cast<long long>(rec.start_unix)) + ": " + cmd + "\n";
  for (const std::string* log : {&spec.log_out, &spec.log_err})
    if (const std::string w = append_line(*log, hdr); !w.empty())
      progress_->event("warning " + job.id + ": " + base::printable_line(w));
  save_state();
  ++progress_->counts().running;
  phase_->live[i] = Live{nullptr, progress_->elapsed()};
  phase_->peak = std::max(phase_->peak, phase_->live.size());
  try {
    phase_->live[i].proc = pool_.launch(spec);
    phase_->live[i].warm = phase_->live[i].proc->warm();
  } catch (const std::exception& e) {
    (void)append_line(spec.log_err, std::string("gridrun: ") + e.what() + "\n");  // its header's warned
    on_exit(i, 127);
    return;
  }
  std::ostringstream what;
  what << "start   " << job.id << " " << describe(request_for(job))
       << (share > 1 ? ", GPU shared by up to " + std::to_string(share) + " jobs" : std::string()) << " on "
       << rec.host << " cores " << rec.cores;
  if (!rec.gpus.empty()) what << " gpus " << rec.gpus;
  if (spec.resume) what << " (--resume)";
  if (phase_->live[i].warm) what << " (warm)";
  progress_->event(what.str());
}

// Records an exit; a failure is queued again while this invocation has retries left, unless it was
// bad input (exit 2), which would only fail again.
void RunLoop::on_exit(std::size_t i, int code) {
  const jobs::Job& job = ex_.jobs[i];
  run::JobRecord& rec = *records_[i];
  ProgressCounts& counts = progress_->counts();
  PhaseRun& ph = *phase_;
  const double dur = progress_->elapsed() - ph.live[i].start;
  const bool warm = ph.live[i].warm;
  const std::string lost = ph.live[i].proc ? ph.live[i].proc->lost_reason() : std::string();
  const Request& req = plan_.req[i];
  ph.busy += dur * (plan_.cluster.total_gpus() > 0 ? req.gpus : req.cores);
  ph.live.erase(i);
  ph.engine.finish(i);
  --counts.running;
  rec.exit_codes.push_back(code);
  rec.end_unix = base::unix_now();
  // The ended job's file, read once through the folder (its index entry is written with the state).
  results::FolderReadOptions fo;
  fo.depth = results::Depth::Summary;
  const auto got = folder_->read({run::RunDir::result_file_name(job.id)}, fo);
  const std::string status = got[0].ok ? got[0].data.status : "";
  if (got[0].ok)
    if (auto w = measured_wall(got[0].data)) measured_[job.id] = *w;
  const run::JobOutcome disk = run::outcome_from_results(status);
  // The runner's own message (its results file's exit_reason, else its line in the log), so that
  // the event line says why without the Open MPI banners around it in the log.
  auto reason = [&] {
    const std::string why =
        run::recorded_failure_reason(rd_, job.id, got[0].ok ? got[0].data.exit_reason : "");
    return why.empty() ? std::string() : ": " + why;
  };
  std::ostringstream what;
  if (code == 0 && run::is_finished(disk)) {
    rec.state = disk;
    ++counts.done;
    progress_->job_finished(dur);
    what << "done    " << job.id << " " << status << " in " << base::format_duration(dur);
  } else if (code == run::kExitDiverged && !stopping_) {
    // The job's own doing, as bad input is: the same seed and lr diverge again, so no retry.
    rec.state = run::JobOutcome::Diverged;
    ++counts.failed;
    what << "diverged " << job.id << reason() << "; not retried; see " << rd_.log_out(job.id);
  } else {
    // A job we asked to stop is interrupted whatever its code (it may have been killed before
    // its ranks could checkpoint); the next run resumes or restarts it.
    const bool interrupted = code == run::kExitInterrupted || stopping_;
    rec.state = interrupted ? run::JobOutcome::Interrupted : run::JobOutcome::Failed;
    const int used = ph.tries[i];
    // Bad input (flags, job file, data files, an unsupported device) fails the same way every time.
    // A job lost in a warm worker is tried again cold once more, whatever --retries says: what
    // failed may have been the worker, not the job (issue 48); so is one whose worker was retired
    // for a done message it could not trust, even in the worker's first job (issue 57).
    const bool warm_loss = (warm || !lost.empty()) && !interrupted && !cold_[i];
    if (!stopping_ && code != run::kExitBadInput && (used <= o_.retries || warm_loss)) {
      if (warm_loss) {
        cold_[i] = 1;
        --ph.tries[i];
      }
      resume_[i] = static_cast<char>(has_checkpoint(rd_.checkpoint_dir(job.id)));
      ph.engine.submit(QueuedJob{i, i, req, ph.est[i]});
      ++counts.pending;
      what << "retry   " << job.id << " exit " << code;
      if (!lost.empty())
        what << ": " << lost;
      else
        what << (code == 0 ? " without a finished results file" : reason());
      if (warm_loss)
        what << ", in a warm worker; again cold";
      else
        what << ", attempt " << used + 1 << " of " << o_.retries + 1;
      what << (resume_[i] ? " (--resume)" : "") << "; see " << rd_.log_err(job.id);
    } else {
      if (!interrupted || !stopping_) ++counts.failed;
      what << (interrupted ? "stopped " : "failed  ") << job.id << " exit " << code
           << (interrupted || code == 0 ? std::string() : reason()) << "; see " << rd_.log_err(job.id);
    }
  }
  save_state();
  // The index is rewritten whole, so at most every 5 s while jobs end (and at the end of the run):
  // a status in between reads the few files that ended since.
  if (progress_->elapsed() - index_flushed_at_ >= 5) {
    folder_->flush();
    index_flushed_at_ = progress_->elapsed();
  }
  progress_->event(what.str());
}

// First Ctrl-C (SIGINT, SIGTERM, SIGHUP): no new launches, running jobs checkpoint and stop.
// Second: kill them.
void RunLoop::on_signal() {
  if (!stopping_) {
    stopping_ = true;
    progress_->set_stopping(true, false);
    progress_->event("interrupt: no new jobs; asking " + std::to_string(phase_->live.size()) +
                     " running jobs to checkpoint and stop (again to kill)");
    for (auto& [i, l] : phase_->live)
      if (l.proc) l.proc->interrupt();
  } else if (!killing_) {
    killing_ = true;
    progress_->set_stopping(true, true);
    progress_->event("second interrupt: killing running jobs");
    for (auto& [i, l] : phase_->live)
      if (l.proc) l.proc->kill();
  }
}

// Nothing may hang a run unnoticed. (1) Results final but processes still there after
// exit_grace_s (a trainer stuck in CUDA/NCCL/MPI teardown): the job's work is done, so its
// processes are ended and it is recorded as its results say, with a warning. (2) Rank 0's
// heartbeat file older than heartbeat_timeout_s (a hung rank stops every rank at the next
// collective): ended, recorded failed with that reason (and retried like any failure).
void RunLoop::watchdog(const std::vector<std::pair<std::size_t, int>>& ended) {
  const double t = progress_->elapsed();
  for (auto& [i, l] : phase_->live) {
    if (!l.proc || l.forced_code >= 0) continue;
    if (std::any_of(ended.begin(), ended.end(), [i = i](const auto& e) { return e.first == i; })) continue;
    const std::string& id = ex_.jobs[i].id;
    std::string why;
    if (::access(rd_.result_file(id).c_str(), F_OK) == 0) {
      if (l.final_seen < 0) l.final_seen = t;
      if (t - l.final_seen < o_.exit_grace_s) continue;
      l.forced_code = 0;
      why = "results are final but its processes had not exited " + base::format_duration(o_.exit_grace_s) +
            " later; ended them (recorded as its results say)";
    } else if (o_.heartbeat_timeout_s > 0 && t - l.start > o_.heartbeat_timeout_s) {
      struct stat hb {};
      const std::string f = rd_.heartbeat_file(id);
      const double age =
          ::stat(f.c_str(), &hb) == 0 ? static_cast<double>(std::time(nullptr) - hb.st_mtime) : t - l.start;
      if (age <= o_.heartbeat_timeout_s) continue;
      l.forced_code = run::kExitNoHeartbeat;
      why = "no heartbeat from rank 0 for " + base::format_duration(age) + " (--heartbeat-timeout " +
            base::format_duration(o_.heartbeat_timeout_s) + "): a rank hung; ended the job";
    } else {
      continue;
    }
    (void)append_line(rd_.log_err(id), "gridrun: watchdog: " + why + "\n");  // its header's warned
    progress_->event("warning " + id + ": " + why);
    l.proc->kill();
  }
}

// The facts of one compare-by phase, into state.json (docs/scheduler.md). The figures (samples/s,
// utilization, time to target) are the report's to derive from these and the jobs' result files.
void RunLoop::close_phase(const std::string& value) {
  const PhaseRun& ph = *phase_;
  const Cluster& cluster = plan_.cluster;
  run::PhaseRecord rec;
  rec.name = value;
  rec.makespan_s = progress_->elapsed() - ph.t0;
  rec.start_unix = base::unix_now() - rec.makespan_s;
  rec.busy_resource_s = ph.busy;
  rec.capacity = cluster.total_gpus() > 0 ? cluster.total_gpus() : cluster.total_cores();
  rec.max_running = static_cast<double>(ph.peak);
  // Every job of the phase has been reaped by now, so their CPU time is in our getrusage.
  rec.other_cpu_share = base::outside_cpu_share(ph.cpu0, base::cpu_snapshot(), rec.makespan_s);
  rec.sitting = sitting_;
  for (std::size_t i : ph.members) rec.jobs.push_back(ex_.jobs[i].id);
  const double makespan = rec.makespan_s, other = rec.other_cpu_share;
  state_.phases[value] = std::move(rec);
  save_state();
  progress_->event("phase " + run::phase_label(ex_.compare_by, value) + " done: makespan " +
                   base::format_duration(makespan) +
                   (std::isfinite(other)
                        ? ", " + base::format_fixed(100 * other, 0) + " % of the CPU to other processes"
                        : std::string()));
}

RunOutcome RunLoop::summary() {
  RunOutcome res;
  res.run_dir = rd_.root();
  res.total = ex_.jobs.size();
  res.skipped = skipped_;
  res.launched = true;
  res.interrupted = stopping_;
  {
    struct stat idx {
    }, h5{};
    const std::string index = folder_->index_path();
    const bool current =
        ::stat(rd_.index_file().c_str(), &h5) == 0 && ::stat(index.c_str(), &idx) == 0 &&
        (h5.st_mtim.tv_sec > idx.st_mtim.tv_sec ||
         (h5.st_mtim.tv_sec == idx.st_mtim.tv_sec && h5.st_mtim.tv_nsec >= idx.st_mtim.tv_nsec));
    res.index_stale = !current || fresh_reads_ || skipped_ < ex_.jobs.size();
  }
  for (const run::JobRecord* rec : records_) {
    const run::JobOutcome s = rec->state;
    if (run::is_finished(s))
      ++res.completed;
    else if (run::is_failure(s))
      ++res.failed;
  }
  save_state();
  out_ << (stopping_ ? "interrupted: " : "finished: ") << res.completed << "/" << res.total << " completed, "
       << res.failed << " failed" << (stopping_ ? "; run the same command again to resume" : "") << " ("
       << base::format_duration(progress_->elapsed()) << ")\n"
       << std::flush;
  res.exit_code = res.completed == res.total ? 0 : 1;
  return res;
}

}  // namespace gridrun::scheduler
