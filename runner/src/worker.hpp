// A warm worker (gridrun-train --worker DIR): the ranks of a job that completed stay alive and take
// the next job of the same device, ranks and threads from the launcher, instead of exiting and
// being launched again (docs/scheduler.md, "Warm launches").
//
// Why a job in a warm worker starts from the state of a cold launch: every job builds its own
// model, optimizer, data loader (and its threads), AMP scaler, CUDA graph, RNG streams (seeded from
// the job's seed, jobs' harness), results file and checkpointer, and drops them when it ends; what
// the process keeps is only what no job can see: loaded libraries, the communicator (same ranks),
// the owner watch. Between jobs the CUDA caching allocator gives its blocks back, the peak-memory
// counter is reset, and a worker whose memory grew past its bound leaves.
#pragma once

#include <cstdint>
#include <string>

#include "gridrun/run/worker_channel.hpp"
#include "gridrun/runner/communicator.hpp"
#include "gridrun/runner/options.hpp"

namespace gridrun::runner {

class WarmWorker {
 public:
  // Opens this rank's pipes in first.worker_dir. Throws std::runtime_error naming a missing pipe.
  WarmWorker(const RunnerOptions& first, Communicator& comm);

  // Collective. After the job it was given last completed (the launched one first: with --then-job,
  // its chain): release its caches, report it by the id the launcher knows (rank 0), wait for the
  // next job. Returns that job's options (valid until the next call), or nullptr when the worker
  // leaves: the launcher closed the pipes or is gone, a stop signal came to any rank while idle (the
  // ranks agree, so all leave or none), or memory grew past the bound. Throws BadInput for a job
  // that cannot run on these ranks.
  const RunnerOptions* next();

 private:
  const RunnerOptions& first_;
  Communicator& comm_;
  run::WorkerInbox inbox_;
  std::int64_t base_rss_ = -1;  // after the first job
  RunnerOptions job_;
  bool served_ = false;  // job_ holds a job it was given (else the launched one is the last)
  std::string ticket_;   // the current job's, echoed in its done message (run::check_done)
};

// What one job left in the process that the next must not inherit: on a GPU build, the CUDA
// caching allocator's free blocks (the next job's memory cap and peak start from nothing).
void release_job_caches();

}  // namespace gridrun::runner
