// The launch of one placed job, as `gridrun run` and `gridrun calibrate` both make it (issue 59:
// it was assembled field by field in each, and the two drifted apart in which paths were
// absolute).
#pragma once

#include <string>

#include "executor.hpp"
#include "gridrun/run/run_dir.hpp"
#include "gridrun/scheduler/placement.hpp"
#include "gridrun/scheduler/resources.hpp"

namespace gridrun::scheduler {

// Where a job runs: its run directory (absolute: launched processes start elsewhere) and its
// place on the cluster.
struct LaunchPlace {
  const run::RunDir& dir;
  const Cluster& cluster;
  const Allocation& alloc;
  Request req;
  std::string process_key;  // jobs::process_key(params).text() (warm workers: which jobs share one)
};

// A job's files in `at.dir` (job file, results, logs, rankfile, warm workers' folder), its host,
// its cores (bound where the cluster is bindable, else oversubscribed) and GPUs, and this process
// as the owner its ranks outlive by no more than a moment. The caller adds what is its own: resume,
// heartbeat, GPU share, warm or cold, chained jobs, and the program (set_program).
LaunchSpec launch_spec_for(const std::string& job_id, const LaunchPlace& at);

}  // namespace gridrun::scheduler
