// Gradient averaging for data-parallel training: bucketing and overlap with backward.
//
// Parameters are grouped into buckets of about bucket_mb, in reverse registration order (roughly
// the order backward produces their gradients), each bucket with one flat buffer. The layout
// depends only on the parameter list and bucket_mb, so it is identical on every rank.
// With overlap, a hook on each parameter copies its gradient into the bucket buffer as backward
// produces it; when a bucket is complete it is handed to the communicator at once, so reductions run
// while backward continues. Buckets are launched strictly in index order (a bucket that completes
// early waits for its predecessors), which keeps the sequence of collectives identical on all
// ranks even if gradient readiness order differed. finish() launches whatever is left, waits only
// for outstanding buckets, divides by the world size and writes the averages into param.grad().
// Without overlap, all buckets are filled and reduced after backward (for comparison).
// With one rank nothing is copied or reduced.
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <vector>

#include "gridrun/runner/communicator.hpp"

namespace gridrun::runner {

struct GradSyncOptions {
  double bucket_mb = 25.0;
  bool overlap = true;
};

struct GradSyncStats {
  double comm_s = 0;     // sum of the reductions' own durations this step
  double exposed_s = 0;  // time finish() spent waiting for reductions
};

class GradSync {
 public:
  // `params` in registration order; hooks are registered on each (they must outlive GradSync).
  GradSync(std::vector<at::Tensor> params, Communicator& comm, GradSyncOptions opts);
  ~GradSync();
  GradSync(const GradSync&) = delete;
  GradSync& operator=(const GradSync&) = delete;

  void begin_step();             // call before backward
  GradSyncStats finish();        // call after backward, before the optimizer step
  std::size_t num_buckets() const;
  // Parameter indices per bucket (for tests and the docs' layout dump).
  std::vector<std::vector<std::size_t>> layout() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gridrun::runner
