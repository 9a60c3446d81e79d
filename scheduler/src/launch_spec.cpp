// launch_spec_for (launch_spec.hpp).
#include "launch_spec.hpp"

#include <unistd.h>

namespace gridrun::scheduler {

LaunchSpec launch_spec_for(const std::string& job_id, const LaunchPlace& at) {
  const Node& node = at.cluster.nodes[at.alloc.node];
  LaunchSpec spec;
  spec.job_id = job_id;
  spec.job_file = at.dir.job_file(job_id);
  spec.results_dir = at.dir.results_dir();
  spec.log_out = at.dir.log_out(job_id);
  spec.log_err = at.dir.log_err(job_id);
  spec.rankfile = at.dir.rankfile(job_id);
  spec.workers_dir = at.dir.workers_dir();
  spec.req = at.req;
  spec.process_key = at.process_key;
  spec.place = at.alloc;
  spec.host = node.name;
  if (at.cluster.bindable)
    for (int c : at.alloc.cores) spec.core_ids.push_back(node.cores[c]);
  else
    spec.oversubscribe = true;
  spec.gpus = gpus_string(at.cluster, at.alloc);
  spec.owner_pid = static_cast<int>(::getpid());
  return spec;
}

}  // namespace gridrun::scheduler
