// Gradient averaging for data-parallel training: bucketing and overlap with backward.
//
// Parameters are grouped into buckets of about bucket_mb, in reverse registration order (roughly
// the order backward produces their gradients), each bucket with one flat buffer. The layout
// depends only on the parameter list and bucket_mb, so it is identical on every rank.
// Each parameter's .grad() is a view into its bucket's buffer, so backward accumulates directly
// into the buffers. With overlap, a post-hook on each parameter's gradient accumulator marks it
// ready; when a bucket is complete it is handed to the communicator at once, so reductions run
// while backward continues. Buckets are launched strictly in index order (a bucket that completes
// early waits for its predecessors), which keeps the sequence of collectives identical on all
// ranks even if gradient readiness order differed. finish() launches whatever is left, waits only
// for outstanding buckets and divides by the world size in place.
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

  void begin_step();  // call before backward
  // Zeroes the gradients in place (they are bucket views and must not be reset); returns false
  // with one rank, where gradients are ordinary tensors and the optimizer's zero_grad applies.
  bool zero_grad();
  GradSyncStats finish();  // call after backward, before the optimizer step
  std::size_t num_buckets() const;
  // Parameter indices per bucket (for tests and the docs' layout dump).
  std::vector<std::vector<std::size_t>> layout() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace gridrun::runner
