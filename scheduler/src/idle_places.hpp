// Where warm workers wait for their next job, as the placement engine sees them (issue 59: worker
// reuse was decided beside placement, in the local executor and again in the simulator).
//
// Why a placement preference: the engine picks a job's cores by lowest free id, so two jobs of
// different processes ending together could each land on the other's worker and retire both. With
// the idle places as a PlacementPreference, a job placed on a node takes the cores and GPUs of an
// idle worker of its process there when they are free. `gridrun run` and `gridrun calibrate` fill
// it from their WorkerPool (worker_pool.hpp, offer_idle) before each placement; `gridrun simulate`
// keeps it as its simulated workers end jobs, and models the pool's rule for who takes a job and
// who leaves (take(): on the engine's core and GPU indices, where the pool compares OS core ids and
// CUDA devices, and also retires every idle worker of the host for an unbound job).
#pragma once

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "gridrun/scheduler/placement.hpp"

namespace gridrun::scheduler {

// Whether `x` and `y` hold a core or GPU of the same node (peers included).
bool shares_resources(const Allocation& x, const Allocation& y);
// Whether they are the same resources (node, cores, GPUs and peers, in order).
bool same_place(const Allocation& x, const Allocation& y);

class IdlePlaces : public PlacementPreference {
 public:
  // `key_of(k)`: the process key (jobs::process_key(...).text()) of the job the engine knows as
  // QueuedJob::key k.
  explicit IdlePlaces(std::function<std::string(std::size_t)> key_of) : key_of_(std::move(key_of)) {}

  // A worker of process `key` waits on `at` since `since` (seconds, the caller's clock).
  void add(std::string key, Allocation at, double since);
  void clear() { idle_.clear(); }
  std::size_t size() const { return idle_.size(); }
  // Those idle since before `t` leave (their --worker-idle time is over).
  void expire_before(double t);
  // The first place on `node` where a worker of job `key`'s process waits, or nullptr.
  const Allocation* preferred(std::size_t key, int node) const override;
  // A job of process `key` starts on `at`: a worker of that key waiting on exactly `at` takes it
  // (true, and it is no longer idle); every other worker on a core or GPU of `at` leaves, as the
  // local executor's do (the job would share them).
  bool take(const std::string& key, const Allocation& at);

 private:
  struct Idle {
    std::string key;
    Allocation at;
    double since;
  };
  std::function<std::string(std::size_t)> key_of_;
  std::vector<Idle> idle_;
};

}  // namespace gridrun::scheduler
