// WorkerPool (worker_pool.hpp): the warm workers' states, their hand-over and their end.
#include "worker_pool.hpp"

#include <algorithm>
#include <filesystem>
#include <set>
#include <sstream>

#include "gridrun/base/host.hpp"
#include "gridrun/base/own_dir.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/run/worker_channel.hpp"

namespace gridrun::scheduler {

const char* to_string(WorkerState s) {
  switch (s) {
    case WorkerState::starting: return "starting";
    case WorkerState::busy: return "busy";
    case WorkerState::idle: return "idle";
    case WorkerState::retiring: return "retiring";
    case WorkerState::gone: return "gone";
  }
  return "?";
}

// One warm worker: the mpirun the executor started, its pipes, and where it runs. Shared by the
// pool and the handle of the job it runs (WarmJob).
struct WorkerPool::Worker {
  std::unique_ptr<RunningJob> proc;  // its mpirun
  run::WorkerPipes pipes;
  std::string dir;
  std::string key;  // worker_key: jobs of equal keys may run in it
  std::string process_key;
  Allocation place;
  std::string host;
  std::set<int> cores;
  std::set<std::string> gpus;
  WorkerState state = WorkerState::starting;
  std::string job_id;  // the job it answers for ("" when none): starting, busy, or retiring with it
  std::string ticket;  // the secret its done message for job_id must carry (run::check_done)
  std::string lost;    // why it was retired with its job: a done message it could not trust
  double idle_since = 0;

  bool running() { return !exited(); }
  bool exited() {
    if (state == WorkerState::gone) return true;
    if (!proc->try_wait()) return false;
    state = WorkerState::gone;
    return true;
  }
  bool idle() { return state == WorkerState::idle && running(); }
  // Closing the task pipes is the worker's signal to leave: every rank reads end-of-file.
  void retire() {
    if (state != WorkerState::gone) state = WorkerState::retiring;
    pipes.tasks.clear();
  }
  // A message it cannot trust (issue 57): nothing more of it is believed. Its ranks are killed (a
  // job whose end cannot be told must not go on), and the job is tried again cold (lost()).
  void distrust(const std::string& why) {
    lost = "worker " + name() + "'s done pipe: " + why;
    pipes.done.close();
    retire();
    proc->kill();
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
        // rank 0 is a child of mpirun (the executor signals the ranks the same way).
        if (const std::string why = run::check_done(d, job_id, ticket, base::children_of(proc->pid()));
            !why.empty()) {
          distrust(why);
          return std::nullopt;
        }
        job_id.clear();
        ticket.clear();
        idle_since = base::unix_now();
        state = WorkerState::idle;
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
  std::string name() const { return std::filesystem::path(dir).filename().string(); }
};

namespace {

using Worker = WorkerPool::Worker;

// The job a warm worker runs. Its end is the worker's message, or the worker's exit (a job that
// does not complete ends its worker). Destroyed while its job still runs, it kills the worker.
class WarmJob : public RunningJob {
 public:
  WarmJob(std::shared_ptr<Worker> w, bool warm) : w_(std::move(w)), warm_(warm) {}
  ~WarmJob() override {
    if (w_->job_id.empty()) return;
    kill();
    w_->job_id.clear();  // the pool reaps it once it exited (retire_idle), as any ended worker
  }
  int pid() const override { return w_->proc->pid(); }
  bool warm() const override { return warm_; }
  std::optional<int> try_wait() override {
    if (w_->lost.empty())
      if (auto code = w_->done_message()) return code;
    if (w_->exited()) {
      w_->job_id.clear();
      return w_->proc->try_wait();
    }
    return std::nullopt;
  }
  std::string lost_reason() const override { return w_->lost; }
  void interrupt() override { w_->proc->interrupt(); }
  void kill() override {
    w_->retire();
    w_->proc->kill();
  }

 private:
  std::shared_ptr<Worker> w_;
  bool warm_;
};

// Jobs of equal keys may run in the same worker: the same process (jobs::process_key) of the same
// binary, on the same host, cores and GPUs, with the same GPU memory share.
std::string worker_key(const LaunchSpec& s) {
  std::ostringstream k;
  k << s.process_key << '|' << s.train_bin << '|' << s.host << '|' << s.gpus << '|' << s.gpu_memory_fraction
    << '|' << s.oversubscribe << '|';
  for (int c : s.core_ids) k << c << ',';
  return k.str();
}

// Only the pipes it made, never through a link (issue 57: remove_all of a `workers` link's
// target's w1/ and w2/).
void remove_dir(const Worker& w) { base::remove_own_entries(w.dir, run::is_worker_pipe_name); }

}  // namespace

WorkerPool::~WorkerPool() {
  // Idle workers leave on end-of-file; whatever is still there after a short wait is killed.
  for (auto& w : workers_) w->retire();
  for (auto& w : workers_)
    if (auto p = base::PinnedProcess::open(w->proc->pid()); p && w->running()) p->wait_exit(5.0);
  for (auto& w : workers_) {
    w->proc->kill();
    w->state = WorkerState::gone;
    w->job_id.clear();  // a job handle that outlives the pool has nothing left to kill
    remove_dir(*w);
  }
}

std::unique_ptr<RunningJob> WorkerPool::launch(const LaunchSpec& s) {
  reap();
  const std::string key = s.warm ? worker_key(s) : "";
  // Pop: an idle worker of this key takes the job; one whose pipes no longer take it retires.
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
    w->state = WorkerState::busy;
    w->job_id = s.job_id;
    w->ticket = ticket;
    return std::make_unique<WarmJob>(w, true);
  }
  // Idle workers on this job's cores or GPUs leave: the job would share them.
  std::set<std::string> gpus;
  for (const auto& g : base::split(s.gpus, ','))
    if (!g.empty()) gpus.insert(g);
  for (auto& w : workers_)
    if (w->idle() && w->host == s.host &&
        (std::any_of(s.core_ids.begin(), s.core_ids.end(), [&](int c) { return w->cores.count(c) > 0; }) ||
         std::any_of(gpus.begin(), gpus.end(), [&](const std::string& g) { return w->gpus.count(g) > 0; }) ||
         s.core_ids.empty() || w->cores.empty()))
      w->retire();
  if (!s.warm) return exec_.launch(s);
  // Push: a new worker, its first job given on its command line.
  auto w = std::make_shared<Worker>();
  w->dir = (std::filesystem::path(s.workers_dir) / ("w" + std::to_string(++started_))).string();
  base::make_own_dir(s.workers_dir);  // never a link: its w<N> folders are emptied at the end
  w->pipes = run::make_worker_pipes(w->dir, s.req.ranks);
  w->key = key;
  w->process_key = s.process_key;
  w->place = s.place;
  w->host = s.host;
  w->cores.insert(s.core_ids.begin(), s.core_ids.end());
  w->gpus = gpus;
  w->job_id = s.job_id;
  w->ticket = run::new_worker_ticket();
  LaunchSpec ws = s;
  ws.worker_dir = w->dir;
  ws.worker_ticket = w->ticket;
  w->proc = exec_.launch(ws);
  workers_.push_back(w);
  return std::make_unique<WarmJob>(w, false);
}

std::string WorkerPool::idle_worker_for(const LaunchSpec& s) const {
  const auto w = s.warm ? idle_worker(worker_key(s)) : nullptr;
  return w ? "warm worker " + w->name() + " (mpirun pid " + std::to_string(w->proc->pid()) + ")" : "";
}

std::size_t WorkerPool::retire_idle(double idle_s) {
  const double now = base::unix_now();
  for (auto& w : workers_)
    if (w->idle() && now - w->idle_since >= idle_s) w->retire();
  reap();
  return workers_.size();
}

std::vector<int> WorkerPool::event_fds() const {
  std::vector<int> fds;
  for (const auto& w : workers_)
    if (!w->job_id.empty() && w->pipes.done.open()) fds.push_back(w->pipes.done.fd());
  return fds;
}

std::vector<IdleWorker> WorkerPool::idle() const {
  std::vector<IdleWorker> out;
  for (const auto& w : workers_)
    if (w->state == WorkerState::idle) out.push_back({w->process_key, w->place, w->idle_since});
  return out;
}

void WorkerPool::offer_idle(IdlePlaces& places) const {
  places.clear();
  for (IdleWorker& w : idle()) places.add(std::move(w.process_key), std::move(w.place), w.since);
}

std::size_t WorkerPool::count(WorkerState s) const {
  return static_cast<std::size_t>(
      std::count_if(workers_.begin(), workers_.end(), [&](const auto& w) { return w->state == s; }));
}

void WorkerPool::reap() {
  // A worker with a job is reaped by its job's try_wait first (the job's end is its exit code).
  std::vector<std::shared_ptr<Worker>> alive;
  for (auto& w : workers_) {
    if (w->job_id.empty() && w->exited()) {
      remove_dir(*w);
      continue;
    }
    alive.push_back(w);
  }
  workers_.swap(alive);
}

std::shared_ptr<Worker> WorkerPool::idle_worker(const std::string& key) const {
  for (const auto& w : workers_)
    if (w->idle() && w->key == key) return w;
  return nullptr;
}

}  // namespace gridrun::scheduler
