// jobs::footprint: what a job occupies (see footprint.hpp).
#include "gridrun/jobs/footprint.hpp"

#include <algorithm>

#include "gridrun/base/checked.hpp"

namespace gridrun::jobs {

Footprint footprint(const JobParams& p) {
  Footprint f;
  f.device = p.device;
  f.ranks = std::max<std::int64_t>(1, p.ranks);
  f.nodes = std::max<std::int64_t>(1, p.nodes);
  f.threads_per_rank = std::max<std::int64_t>(1, p.threads_per_rank);
  f.cores = base::saturating_mul(f.ranks, f.threads_per_rank);
  // A GPU rank owns one GPU (jobs_per_gpu: a share of one, for one-rank jobs).
  f.gpus = f.gpu() ? f.ranks : 0;
  f.gpu_share = f.gpu() ? std::max<std::int64_t>(1, p.jobs_per_gpu) : 1;
  // jobs::check made ranks a multiple of nodes: each node runs an equal share.
  f.per_node.ranks = std::max<std::int64_t>(1, f.ranks / f.nodes);
  f.per_node.cores = std::max<std::int64_t>(1, f.cores / f.nodes);
  f.per_node.gpus = f.gpus / f.nodes;
  return f;
}

ProcessKey process_key(const Footprint& f) {
  return ProcessKey{f.device, f.ranks, f.threads_per_rank, f.nodes};
}

ProcessKey process_key(const JobParams& p) { return process_key(footprint(p)); }

std::string ProcessKey::text() const {
  return to_string(device) + "|" + std::to_string(ranks) + "|" + std::to_string(threads_per_rank) + "|" +
         std::to_string(nodes);
}

}  // namespace gridrun::jobs
