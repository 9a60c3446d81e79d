// Resources: what a cluster offers (nodes with core ids and GPU ids) and what a job asks for.
//
// Why concrete ids and not counts: jobs that run side by side must not share a core or a GPU, and
// the only way to guarantee that is to hand out disjoint id sets (cores -> an Open MPI rankfile,
// GPUs -> CUDA_VISIBLE_DEVICES). Counts alone would let two jobs bind to the same core.
// The same model serves this machine (detected), a hand-written cluster file (planning,
// simulation) and a Slurm allocation (the slurm/ packer builds a Cluster from its nodes).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gridrun/jobs/footprint.hpp"
#include "gridrun/jobs/job.hpp"

namespace gridrun::scheduler {

struct Node {
  std::string name;
  std::vector<int> cores;  // OS cpu ids a job may be bound to
  // Device names as they go into a job's CUDA_VISIBLE_DEVICES: "0", "1"... or the entries of
  // gridrun's own CUDA_VISIBLE_DEVICES (which may be UUIDs), so a restricted gridrun stays restricted.
  std::vector<std::string> gpus;
  std::int64_t memory_mb = 0;  // informational: jobs declare no memory, so it is not scheduled
};

struct Cluster {
  std::vector<Node> nodes;
  std::string source;  // "this machine", "--cores 4 --gpus 2", or the cluster file path
  // True when core ids are real cpu ids of this machine, so jobs can be bound to them. False for
  // cluster files and for --cores beyond what the OS gives us (then mpirun runs unbound).
  bool bindable = false;
  // With jobs_per_gpu > 1 each GPU is listed this many times in Node::gpus (one entry per slot);
  // total_gpus() counts slots, gpus_text() the physical GPUs.
  int slots_per_gpu = 1;
  int total_cores() const;
  int total_gpus() const;
  std::string gpus_text() const;  // "0 GPUs", "2 GPUs", "1 GPU (4 slots each)"
};

// What one job needs: its jobs::Footprint (the one rule of what a job occupies) per node, in the
// placement's int counts. Most jobs sit on one node; a job with `nodes` > 1 (Slurm only) needs the
// same share on each of that many distinct nodes, so gpus and cores are per node.
struct Request {
  int ranks = 1;  // on each node
  int threads_per_rank = 1;
  int gpus = 0;   // per node: the footprint's GPUs, or its GPU slots when GPUs are shared
  int cores = 1;  // per node: ranks * threads_per_rank
  int nodes = 1;
  bool operator==(const Request& o) const { return gpus == o.gpus && cores == o.cores && nodes == o.nodes; }
};
// The footprint's per-node share; with `slots_per_gpu` > 1 (Cluster::slots_per_gpu: GPUs shared by
// jobs_per_gpu) gpus counts slots, Footprint::gpu_slots_per_node.
Request request_for(const jobs::Footprint& f, int slots_per_gpu = 1);
Request request_for(const jobs::JobParams& p);
Request request_for(const jobs::Job& job);
std::string describe(const Request& r);  // "2 ranks x 1 thread, 2 GPUs, 2 cores"

// Where the resources come from; at most one of cluster_file or (gpus/cores) is usually given,
// and --gpus/--cores override the detected values of this machine.
struct ResourceOptions {
  std::string cluster_file;  // --cluster FILE
  int gpus = -1;             // --gpus N  (-1: detect)
  int cores = -1;            // --cores N (-1: detect)
  // Each GPU is this many slots (set by run_grid from the jobs' `jobs_per_gpu` parameter: the least
  // common multiple of their values); a job with jobs_per_gpu=k takes slots/k of them, so k such
  // jobs run side by side on one GPU, as Ray Tune's fractional GPUs.
  int jobs_per_gpu = 1;
};

// This machine: cores from sched_getaffinity, GPUs from NVML (hw/nvml.hpp) or `nvidia-smi -L`,
// restricted to CUDA_VISIBLE_DEVICES (hw/visible_devices.hpp) when that is set.
Cluster detect_local();
// Detected machine with overrides, or the cluster file. Throws std::invalid_argument (exit 2) on a
// bad file or flag, naming file:line:col and key.
Cluster resolve_cluster(const ResourceOptions& opts);
// Cluster file (YAML):
//   nodes:
//     - {name: gpu, count: 1000, cores: 32, gpus: 4, memory_gb: 256}
//     - {name: fat01, cores: 64, gpus: [0, 1, 2, 3, 4, 5, 6, 7]}
Cluster load_cluster_file(const std::string& path);
Cluster load_cluster_string(const std::string& yaml, const std::string& display_name);

struct Infeasible {
  std::string job_id;
  std::string reason;  // "needs 4 GPUs on one node; the largest node has 2"
};
// Jobs that fit on no node even when the cluster is empty.
std::vector<Infeasible> find_infeasible(const std::vector<jobs::Job>& jobs, const Cluster& cluster);
// Throws std::invalid_argument listing (up to 10 of) the infeasible jobs; used by `gridrun run`
// before anything is launched and by `gridrun plan --cluster/--gpus/--cores`. When some jobs do
// fit and `rest_command` is set (e.g. "gridrun run grid.yaml"), the message also says which jobs
// need what ("2 jobs need device=gpu (1 GPU each); this machine has 0 GPUs") and the command that
// runs the rest: rest_command + " --only KEY=VALUE[,VALUE]", KEY being a parameter whose values
// separate the jobs that fit from the others (device first), or says that none does.
void check_feasible(const std::vector<jobs::Job>& jobs, const Cluster& cluster,
                    const std::string& rest_command = "");

}  // namespace gridrun::scheduler
