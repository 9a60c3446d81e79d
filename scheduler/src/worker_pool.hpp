// The warm workers of one `gridrun run` (or `gridrun calibrate`): processes whose ranks run job
// after job of the same process key, each handed over on the worker's pipes (run/worker_channel.hpp,
// runner/worker.hpp). As Ray's raylet WorkerPool: each worker has one explicit state, and the pool
// pops an idle worker for a job, pushes a new one, retires and reaps them.
//
// Why a pool beside the Executor, not in it: an executor only starts and stops processes (a cold
// job, or a worker's first launch with LaunchSpec::worker_dir); which worker takes a job, when one
// leaves, and where idle ones wait (idle_places.hpp, the engine's placement preference) is the
// same whatever started the processes.
//
//   starting --done--> idle --pop--> busy --done--> idle      any --retire--> retiring --exit--> gone
//
// starting: launched with its first job (not yet known to run warm); busy: running a job handed
// over while idle; idle: waiting on its task pipe; retiring: its task pipes closed (every rank reads
// end-of-file and leaves), perhaps still ending a job that was killed; gone: its mpirun exited,
// reaped (reap removes it and its pipes' folder).
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "executor.hpp"
#include "gridrun/scheduler/placement.hpp"
#include "idle_places.hpp"

namespace gridrun::scheduler {

enum class WorkerState { starting, busy, idle, retiring, gone };
const char* to_string(WorkerState s);

// An idle worker's process and place, for the placement preference (IdlePlaces).
struct IdleWorker {
  std::string process_key;
  Allocation place;
  double since = 0;  // unix seconds
};

class WorkerPool {
 public:
  struct Worker;

  // `exec` starts the workers' processes and the cold jobs; it must outlive the pool.
  explicit WorkerPool(Executor& exec) : exec_(exec) {}
  // Every worker leaves: idle ones on end-of-file within a few seconds, then what is left is killed
  // and every worker's pipes are removed.
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Starts `spec`: with spec.warm in an idle worker of its key (popped: its task sent), else in a
  // new worker (pushed, `starting`); cold, in processes of its own. Idle workers on any of its cores
  // or GPUs retire first (the job would share them). The handle's end is the job's, not the
  // worker's: its done message, or the worker's exit.
  std::unique_ptr<RunningJob> launch(const LaunchSpec& spec);
  // What launch(spec) would run it in: "warm worker w2 (mpirun pid 1234)"; "" when it would start
  // processes.
  std::string idle_worker_for(const LaunchSpec& spec) const;
  // Idle workers idle for `idle_s` or more retire (0: every idle one); gone ones are reaped.
  // Returns how many workers are left.
  std::size_t retire_idle(double idle_s);
  // Descriptors that become readable when a job may have ended without a process exiting (the done
  // pipes of workers with a job): the run loop waits on them beside its signals.
  std::vector<int> event_fds() const;
  // Where idle workers wait.
  std::vector<IdleWorker> idle() const;
  // `places` becomes where idle workers wait now: the engine's placement preference for the next
  // placement (run loop and calibration alike).
  void offer_idle(IdlePlaces& places) const;
  // How many workers are in state `s` (gone ones until reaped).
  std::size_t count(WorkerState s) const;

 private:
  // Ended workers leave the pool and their pipes' folder.
  void reap();
  std::shared_ptr<Worker> idle_worker(const std::string& key) const;

  Executor& exec_;
  std::vector<std::shared_ptr<Worker>> workers_;
  int started_ = 0;
};

}  // namespace gridrun::scheduler
