// Private to the runner: StepExecutor, the arithmetic of one training step for the training loop
// (trainer.cpp): forward and loss (with bf16/fp16 autocast on a GPU), backward with the gradient
// allreduce (GradSync), fp16 unscaling and the optimizer step, or the replay of a captured CUDA
// graph of the whole step (cuda_graph=true).
//
// Why a type of its own: it owns everything that changes the weights (optimizer, foreach SGD,
// gradient sync, CUDA graph) and nothing of what is recorded or when the loop stops, so the loop
// reads as data -> step -> flags, and the numerics live in one file. It marks the step's parts on
// the caller's StepTimer (clocks.hpp) and leaves the loss and correct count on the device.
#pragma once

#include <torch/optim/optimizer.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "clocks.hpp"
#include "foreach_sgd.hpp"
#include "grad_sync.hpp"
#include "job_harness.hpp"

namespace gridrun::runner {

#ifdef GRIDRUN_HAVE_NCCL
class GraphStep;  // step_executor.cpp
#endif

// One step's input, on the device.
struct StepInput {
  at::Tensor x, y;
  double lr = 0;
  std::int64_t global_step = 0;  // steps done before this one (the graph is captured after a warm-up)
};

struct StepOut {
  at::Tensor loss, correct;  // device scalars of this rank
  GradSyncStats sync;
};

class StepExecutor {
 public:
  // The optimizer of the job's parameters at learning rate `lr`, its foreach SGD, the gradient
  // buckets and, with cuda_graph=true, the (not yet captured) graph.
  StepExecutor(JobHarness& h, double lr);
  ~StepExecutor();
  StepExecutor(const StepExecutor&) = delete;
  StepExecutor& operator=(const StepExecutor&) = delete;

  // Forward, backward, allreduce and optimizer step (or a graph replay); marks kForward, kBackward,
  // kExposed and kOptimizer on `timer`. fp16 reads and updates `loss_scale` (TrainState's, saved
  // in checkpoints).
  StepOut run(const StepInput& in, double& loss_scale, StepTimer& timer);

  torch::optim::Optimizer& optimizer() { return *opt_; }
  std::size_t num_buckets() const { return sync_.num_buckets(); }

 private:
  StepOut eager_step(const StepInput& in, double& loss_scale, StepTimer& timer);
  bool unscale_fp16(double& loss_scale);

  Model& model_;
  const jobs::JobParams& j_;
  const torch::Device dev_;
  std::vector<at::Tensor> params_;
  std::unique_ptr<torch::optim::Optimizer> opt_;
  std::unique_ptr<ForeachSgd> fast_sgd_;
  GradSync sync_;
  const bool fp16_, autocast_;
#ifdef GRIDRUN_HAVE_NCCL
  std::unique_ptr<GraphStep> graph_;  // null unless cuda_graph=true
#endif
};

}  // namespace gridrun::runner
