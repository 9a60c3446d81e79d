// Placement: which queued job starts now, on which node, with which cores and GPUs.
//
// Why one engine for everything: `gridrun run` (real mpirun), `gridrun simulate` (given
// durations, event-driven) and the Slurm node packer all ask the same question, so they share
// `Engine` and differ only in what a "clock" and a "finish" are. Decisions depend only on the
// queue, the free resources and the estimated durations, never on wall time, so a simulated
// schedule is the schedule a real run would take when the estimates are right.
//
// Scale: `ClusterState` keeps per-node free counts in a max-segment tree, so "first node where a
// request fits" costs O(log nodes) in practice; 100,000 jobs on 1,000 nodes schedule in well
// under a second (bench/scheduler).
#pragma once

#include <algorithm>
#include <cstddef>
#include <limits>
#include <memory>
#include <set>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "gridrun/scheduler/resources.hpp"

namespace gridrun::scheduler {

// Concrete resources given to one running job: indices into Node::cores and Node::gpus.
struct Allocation {
  int node = -1;
  std::vector<int> cores;
  std::vector<int> gpus;
  // A multi-node job's other nodes (Request::nodes > 1), each with the same share; empty otherwise.
  std::vector<Allocation> peers;
};
// "host1" or, for a multi-node job, "host1+host2".
std::string nodes_string(const Cluster& c, const Allocation& a);
std::string cores_string(const Cluster& c, const Allocation& a);  // "0,1" (OS cpu ids)
std::string gpus_string(const Cluster& c, const Allocation& a);   // "2,3" (CUDA_VISIBLE_DEVICES)

// Where a job would rather run on the node its policy chose (issue 59): resources on which a warm
// worker of the job's process waits (idle_places.hpp), so that the job reuses it instead of
// retiring it. Policies decide which job starts and on which node; a preference only picks among
// that node's free cores and GPUs, so it never changes what starts when.
class PlacementPreference {
 public:
  virtual ~PlacementPreference() = default;
  // An allocation on `node` for the job the caller knows as `key` (QueuedJob::key), or nullptr.
  // Taken only when all of it is free and it has exactly the request's cores and GPUs.
  virtual const Allocation* preferred(std::size_t key, int node) const = 0;
};

// Free resources of every node plus who runs where (with estimated end times, for reservations).
class ClusterState {
 public:
  explicit ClusterState(const Cluster& cluster);
  const Cluster& cluster() const { return cluster_; }
  std::size_t size() const { return free_gpus_.size(); }
  int free_gpus(int node) const { return free_gpus_[node]; }
  int free_cores(int node) const { return free_cores_[node]; }
  bool fits(int node, const Request& r) const {
    return free_gpus_[node] >= r.gpus && free_cores_[node] >= r.cores;
  }
  // First node (lowest index) where `r` fits within free resources capped by the node's limit.
  // -1 when none. Limits let a policy hide a node (exclusive) or shrink it (reservations).
  int find(const Request& r) const;
  // Nodes for `r`: {find(r)} for a one-node job; for r.nodes > 1 the lowest-numbered r.nodes
  // distinct nodes that each hold the share (a linear scan: multi-node jobs are few). Empty when
  // they do not all fit now.
  std::vector<int> find_nodes(const Request& r) const;
  void set_limit(int node, int gpus, int cores);
  void clear_limit(int node);
  // The preference's allocation when it is free and of the request's size (one-node jobs), else the
  // lowest free ids; `r` must fit. `key` and `end` record the running job for reservations.
  Allocation allocate(int node, const Request& r, std::size_t key, double end);
  // nullptr: none (the lowest free ids). Not owned; must outlive the calls to allocate.
  void set_preference(const PlacementPreference* p) { preference_ = p; }
  // The same share on each of `nodes` (from find_nodes): the first holds the rest as peers.
  Allocation allocate(const std::vector<int>& nodes, const Request& r, std::size_t key, double end);
  // Releases the allocation and its peers.
  void release(const Allocation& a, std::size_t key);

  struct Running {
    double end;
    int gpus;
    int cores;
    std::size_t key;
  };
  const std::vector<Running>& running_on(int node) const { return running_[node]; }
  // Bumped on every allocate/release of the node: lets a policy cache per-node computations.
  std::uint64_t version(int node) const { return version_[node]; }
  // All running jobs ordered by estimated end: (end, key, node).
  const std::set<std::tuple<double, std::size_t, int>>& by_end() const { return by_end_; }

 private:
  void update(int node);
  bool fits_within_limit(int node, const Request& r) const {
    return std::min(free_gpus_[node], limit_gpus_[node]) >= r.gpus &&
           std::min(free_cores_[node], limit_cores_[node]) >= r.cores;
  }
  const Cluster& cluster_;
  std::vector<int> free_gpus_, free_cores_, limit_gpus_, limit_cores_;
  std::vector<std::vector<char>> core_used_, gpu_used_;
  std::vector<std::vector<Running>> running_;
  std::vector<std::uint64_t> version_;
  std::size_t leaves_ = 1;
  std::vector<int> tree_gpus_, tree_cores_;  // max of (capped) free over each subtree
  std::set<std::tuple<double, std::size_t, int>> by_end_;
  const PlacementPreference* preference_ = nullptr;
};

// The longest duration the engine works with, in seconds (about 31.7 years): an estimate beyond
// it is clamped to it, so that every end time stays finite and ordered (reservations, backfill and
// the simulator's event queue compare them; issue 45: a NaN end time hung the simulator).
constexpr double kMaxEngineSeconds = 1e9;
// `s` as the engine takes it: in [0, kMaxEngineSeconds]; NaN (an estimate that could not be made)
// is kMaxEngineSeconds, the cautious side for a reservation (no younger job is squeezed in before
// it). Engine::submit applies it to every estimate; simulate() to every duration.
double engine_seconds(double s);

// A job waiting to start. `key` is the caller's handle; `order` its grid position (fairness).
struct QueuedJob {
  std::size_t key = 0;
  std::size_t order = 0;
  Request req;
  double est_s = 1.0;  // estimated duration (cost model or previous results); Engine::submit clamps it
};

struct Start {
  std::size_t key;
  Allocation alloc;
};

// A placement policy. Policies own their queue; `place` starts what should start now (recording
// the allocation in `state`) and appends it to `out`, starting at most `max_starts` jobs.
class Placement {
 public:
  virtual ~Placement() = default;
  virtual const char* name() const = 0;
  virtual void enqueue(const QueuedJob& job) = 0;
  virtual void place(ClusterState& state, double now, std::size_t max_starts, std::vector<Start>& out) = 0;
  virtual std::size_t pending() const = 0;
  // Called after a job on `node` released its resources (exclusive re-opens the node here).
  virtual void on_release(ClusterState& state, int node) {
    (void)state;
    (void)node;
  }
};

// "packed" (default), "fifo", "exclusive". Throws std::invalid_argument naming the choices.
std::unique_ptr<Placement> make_placement(const std::string& name);
const std::vector<std::string>& placement_names();

struct EngineOptions {
  std::string policy = "packed";
  std::size_t max_parallel = 0;  // 0 = no limit besides resources
};

// Queue + cluster state + policy. The caller owns the clock: it submits jobs, calls schedule(now)
// whenever something changed, and finish(key) when a job ends.
class Engine {
 public:
  Engine(const Cluster& cluster, const EngineOptions& opts);
  void submit(const QueuedJob& job);  // est_s through engine_seconds
  // Starts what should start at `now`, which must be finite (std::invalid_argument otherwise).
  std::vector<Start> schedule(double now);
  void finish(std::size_t key);
  // Where jobs would rather run (ClusterState::set_preference); nullptr: none.
  void set_preference(const PlacementPreference* p) { state_.set_preference(p); }
  std::size_t pending() const { return policy_->pending(); }
  std::size_t running() const { return running_.size(); }
  const ClusterState& state() const { return state_; }
  const Placement& policy() const { return *policy_; }

 private:
  ClusterState state_;
  std::unique_ptr<Placement> policy_;
  std::size_t max_parallel_;
  std::unordered_map<std::size_t, Allocation> running_;  // by key
};

}  // namespace gridrun::scheduler
