// What a job occupies while it runs, computed once from its parameters (issue 46).
//
// Why one type: "a GPU job uses one GPU per rank", "ranks spread evenly over nodes" and "a rank
// takes threads_per_rank cores" used to be restated by the scheduler (Request), the Slurm scripts
// (Shape), the runner's checks, plan's GPU-hours and the report. They are stated here once; those
// are views of a Footprint (scheduler::request_for, slurm::Shape) or read it directly. A new
// device (base/device.hpp) changes footprint() and nothing that reads it.
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>

#include "gridrun/jobs/params.hpp"

namespace gridrun::jobs {

struct Footprint {
  Device device = Device::cpu;
  std::int64_t ranks = 1;             // in all (MPI processes)
  std::int64_t nodes = 1;             // hosts, each with the same share (jobs::check: ranks % nodes == 0)
  std::int64_t threads_per_rank = 1;  // cores per rank, on either device (a GPU rank still needs a
                                      // core for its host thread and data loading)
  std::int64_t cores = 0;             // in all: ranks * threads_per_rank (saturating)
  std::int64_t gpus = 0;              // in all: one per rank on gpu, none on cpu
  // jobs_per_gpu of a gpu job: how many such jobs share one GPU (1: the GPU is the job's alone);
  // 1 on cpu.
  std::int64_t gpu_share = 1;
  // Each of the `nodes` hosts gives the job this much.
  struct PerNode {
    std::int64_t ranks = 1;
    std::int64_t cores = 1;
    std::int64_t gpus = 0;
  } per_node;

  bool gpu() const { return device == Device::gpu; }
  // GPU slots the job takes on each node when every GPU is `slots_per_gpu` slots (a grid that shares
  // GPUs: the lcm of its gpu_share values): a job sharing a GPU by k takes slots_per_gpu / k slots
  // of each GPU, and never less than one. slots_per_gpu 1 (GPUs not shared): its GPUs.
  std::int64_t gpu_slots_per_node(std::int64_t slots_per_gpu) const {
    return per_node.gpus * std::max<std::int64_t>(1, slots_per_gpu / gpu_share);
  }
  // The devices whose peak a job's FLOP/s is measured against (MFU, the roofline): its GPUs on gpu,
  // the one CPU (the job's cores together: the probe's roof of that many cores) on cpu.
  std::int64_t compute_devices() const { return gpu() ? gpus : 1; }
  // What its work is spread over, as resource-seconds count it (a phase's figures): its GPUs on
  // gpu, its cores on cpu.
  std::int64_t units() const { return gpu() ? gpus : cores; }
};

// The one rule from parameters to what a job occupies. Counts are at least 1 (ranks, nodes, cores
// per node) and saturate rather than wrap: jobs::check refuses a job beyond them (issue 45), but a
// job that never went through it (a hand-edited job file) must not wrap to 0 cores on its way to a
// scheduler.
Footprint footprint(const JobParams& p);

// Which jobs may share one process (a chain of --then-job, a warm worker): those of equal keys.
// What a process fixes when it starts: its device, ranks, threads per rank and nodes; the rest is
// each job's own. The calibration's chains, the simulator's warm-worker key and the runner's check
// of a chained job take it from here (issue 59: the test was written in each). The local warm
// worker's key is this plus the binary, host, cores and GPUs (scheduler::WorkerPool); Slurm's tasks
// group by slurm::Shape, which holds the Footprint.
struct ProcessKey {
  Device device = Device::cpu;
  std::int64_t ranks = 1, threads_per_rank = 1, nodes = 1;
  bool operator==(const ProcessKey& o) const {
    return device == o.device && ranks == o.ranks && threads_per_rank == o.threads_per_rank &&
           nodes == o.nodes;
  }
  bool operator!=(const ProcessKey& o) const { return !(*this == o); }
  // "cpu|2|1|1": a map key, and what the simulator's records carry.
  std::string text() const;
};
ProcessKey process_key(const Footprint& f);
ProcessKey process_key(const JobParams& p);  // process_key(footprint(p))

}  // namespace gridrun::jobs
