// One training step's arithmetic (step_executor.hpp says why it is a type of its own). The CUDA
// parts (autocast, the CUDA graph) are compiled only with GRIDRUN_HAVE_NCCL (a CUDA build).
#include "step_executor.hpp"

#include <ATen/ATen.h>
#include <ATen/autocast_mode.h>
#include <torch/nn/functional/loss.h>
#include <torch/optim/adam.h>
#include <torch/optim/adamw.h>
#include <torch/optim/sgd.h>
#include <torch/utils.h>
#ifdef GRIDRUN_HAVE_NCCL
#include <ATen/cuda/CUDAContext.h>
#include <ATen/cuda/CUDAEvent.h>
#include <ATen/cuda/CUDAGraph.h>
#include <torch/version.h>
#endif

#include <string>
#include <utility>

#include "gridrun/runner/errors.hpp"
#include "gridrun/runner/model.hpp"

namespace gridrun::runner {

namespace {

#ifdef GRIDRUN_HAVE_NCCL
// CUDA autocast on/off; the API was renamed in LibTorch 2.4 (device-type arguments).
void set_cuda_autocast(bool on, at::ScalarType dtype) {
#if TORCH_VERSION_MAJOR > 2 || (TORCH_VERSION_MAJOR == 2 && TORCH_VERSION_MINOR >= 4)
  if (on) at::autocast::set_autocast_dtype(at::kCUDA, dtype);
  at::autocast::set_autocast_enabled(at::kCUDA, on);
#else
  if (on) at::autocast::set_autocast_gpu_dtype(dtype);
  at::autocast::set_enabled(on);
#endif
  if (!on) at::autocast::clear_cache();
}
#endif

std::unique_ptr<torch::optim::Optimizer> make_optimizer(const jobs::JobParams& j,
                                                        std::vector<torch::Tensor> params, double lr) {
  if (j.optimizer == "sgd") {
    if (j.nesterov && j.momentum <= 0) throw BadInput("gridrun-train: nesterov=true needs momentum > 0");
    return std::make_unique<torch::optim::SGD>(
        std::move(params),
        torch::optim::SGDOptions(lr).momentum(j.momentum).nesterov(j.nesterov).weight_decay(j.weight_decay));
  }
  if (j.optimizer == "adam")
    return std::make_unique<torch::optim::Adam>(std::move(params),
                                                torch::optim::AdamOptions(lr).weight_decay(j.weight_decay));
  if (j.optimizer == "adamw")
    return std::make_unique<torch::optim::AdamW>(std::move(params),
                                                 torch::optim::AdamWOptions(lr).weight_decay(j.weight_decay));
  throw BadInput("gridrun-train: unknown optimizer '" + j.optimizer + "' (known: sgd, adam, adamw)");
}

// SGD runs as foreach kernels (foreach_sgd.hpp); other optimizers step as LibTorch's.
std::unique_ptr<ForeachSgd> make_fast_sgd(torch::optim::Optimizer& opt,
                                          const std::vector<at::Tensor>& params) {
  if (auto* sgd = dynamic_cast<torch::optim::SGD*>(&opt)) return std::make_unique<ForeachSgd>(*sgd, params);
  return nullptr;
}

}  // namespace

#ifdef GRIDRUN_HAVE_NCCL
namespace {
// Eager steps before the capture: cuDNN autotuning, lazy initialisation and the first momentum
// buffers happen outside the graph.
constexpr std::int64_t kGraphWarmupSteps = 3;
}  // namespace

// cuda_graph=true: the whole step (forward, loss, backward, foreach SGD with the lr read from a
// device scalar) captured once on a side stream and replayed from static input buffers. Why: a
// small model's eager step is bound by kernel launches from the host (a few microseconds each);
// a replay launches the step's hundreds of kernels as one. Needs ranks=1 (the allreduce is not
// captured), optimizer=sgd and no fp16 loss scaling (its overflow check reads the host).
class GraphStep {
 public:
  GraphStep(Model& model, ForeachSgd& sgd, torch::optim::Optimizer& opt, bool autocast, at::ScalarType dtype)
      : model_(model), sgd_(sgd), opt_(opt), autocast_(autocast), dtype_(dtype) {}
  bool ready() const { return captured_; }
  const at::Tensor& loss() const { return loss_; }
  const at::Tensor& correct() const { return correct_; }

  void capture(const at::Tensor& x, const at::Tensor& y, double lr) {
    static_x_ = at::empty_like(x);
    static_y_ = at::empty_like(y);
    neg_lr_ = at::full({}, -lr, x.options().dtype(at::kFloat).memory_format(at::MemoryFormat::Contiguous));
    opt_.zero_grad();  // gradients None: backward allocates them in the graph's pool
    for (auto& p : model_.parameters()) p.mutable_grad() = at::Tensor();
    auto cur = at::cuda::getCurrentCUDAStream();
    auto side = at::cuda::getStreamFromPool();
    at::cuda::CUDAEvent before, after;
    before.record(cur);
    before.block(side);
    {
      at::cuda::CUDAStreamGuard guard(side);
      graph_.capture_begin();
      if (autocast_) {
        at::autocast::set_autocast_cache_enabled(false);  // cached casts would go stale
        set_cuda_autocast(true, dtype_);
      }
      auto out = model_.forward(static_x_);
      auto loss = torch::nn::functional::cross_entropy(out.to(torch::kFloat32), static_y_);
      if (autocast_) set_cuda_autocast(false, at::kFloat);
      loss.backward();
      sgd_.step(lr, neg_lr_);
      {
        torch::NoGradGuard ng;
        loss_ = loss.detach();
        correct_ = out.detach().argmax(1).eq(static_y_).sum();
      }
      graph_.capture_end();
    }
    after.record(side);
    after.block(cur);
    captured_ = true;
  }

  void replay(const at::Tensor& x, const at::Tensor& y, double lr) {
    static_x_.copy_(x, /*non_blocking=*/true);
    static_y_.copy_(y, true);
    neg_lr_.fill_(-lr);
    graph_.replay();
  }

 private:
  Model& model_;
  ForeachSgd& sgd_;
  torch::optim::Optimizer& opt_;
  bool autocast_;
  at::ScalarType dtype_;
  at::cuda::CUDAGraph graph_;
  at::Tensor static_x_, static_y_, neg_lr_, loss_, correct_;
  bool captured_ = false;
};
#endif

StepExecutor::StepExecutor(JobHarness& h, double lr)
    : model_(h.model()),
      j_(h.job()),
      dev_(h.device()),
      params_(model_.parameters()),
      opt_(make_optimizer(j_, params_, lr)),
      fast_sgd_(make_fast_sgd(*opt_, params_)),
      sync_(params_, h.comm(), GradSyncOptions{j_.bucket_mb, j_.overlap}),
      fp16_(h.gpu() && j_.precision == jobs::Precision::fp16),
      autocast_(h.gpu() && j_.precision != jobs::Precision::fp32) {
#ifdef GRIDRUN_HAVE_NCCL
  if (j_.cuda_graph)
    graph_ = std::make_unique<GraphStep>(model_, *fast_sgd_, *opt_, autocast_,
                                         j_.precision == jobs::Precision::bf16 ? at::kBFloat16 : at::kHalf);
#endif
}

StepExecutor::~StepExecutor() = default;

StepOut StepExecutor::run(const StepInput& in, double& loss_scale, StepTimer& timer) {
#ifdef GRIDRUN_HAVE_NCCL
  if (graph_ && (graph_->ready() || in.global_step >= kGraphWarmupSteps)) {
    // The first time: capture records the work without running it; the replay runs it.
    if (!graph_->ready()) graph_->capture(in.x, in.y, in.lr);
    graph_->replay(in.x, in.y, in.lr);
    StepOut out;
    out.loss = graph_->loss().clone();
    out.correct = graph_->correct().clone();
    for (StepPart p : {kForward, kBackward, kExposed, kOptimizer}) timer.mark(p);
    return out;
  }
#endif
  return eager_step(in, loss_scale, timer);
}

StepOut StepExecutor::eager_step(const StepInput& in, double& loss_scale, StepTimer& timer) {
  const at::Tensor& x = in.x;
  const at::Tensor& y = in.y;
  const double lr = in.lr;
  StepOut r;
#ifdef GRIDRUN_HAVE_NCCL
  if (autocast_) set_cuda_autocast(true, j_.precision == jobs::Precision::bf16 ? at::kBFloat16 : at::kHalf);
#endif
  auto out = model_.forward(x);
  auto loss = torch::nn::functional::cross_entropy(out.to(torch::kFloat32), y);
#ifdef GRIDRUN_HAVE_NCCL
  if (autocast_) set_cuda_autocast(false, at::kFloat);
#endif
  timer.mark(kForward);

  sync_.begin_step();
  (fp16_ ? loss * loss_scale : loss).backward();
  timer.mark(kBackward);
  r.sync = sync_.finish();
  timer.mark(kExposed);

  const bool step_ok = !fp16_ || unscale_fp16(loss_scale);
  for (auto& g : opt_->param_groups()) g.options().set_lr(lr);
  if (step_ok) {
    if (fast_sgd_)
      fast_sgd_->step(lr);
    else
      opt_->step();
  }
  if (!sync_.zero_grad()) opt_->zero_grad();
  timer.mark(kOptimizer);
  torch::NoGradGuard ng;
  r.correct = out.detach().argmax(1).eq(y).sum();
  r.loss = loss.detach();
  return r;
}

// fp16: unscale, and skip the step (halving the scale) on overflow; gradients are already
// averaged, so every rank takes the same decision. One device read per step.
bool StepExecutor::unscale_fp16(double& loss_scale) {
  torch::NoGradGuard ng;
  std::vector<at::Tensor> grads;
  for (auto& p : params_)
    if (p.grad().defined()) grads.push_back(p.grad());
  auto found_inf = at::zeros({1}, at::TensorOptions().dtype(at::kFloat).device(dev_));
  auto inv = at::full({1}, 1.0 / loss_scale, at::TensorOptions().dtype(at::kFloat).device(dev_));
  at::_amp_foreach_non_finite_check_and_unscale_(grads, found_inf, inv);
  const bool ok = found_inf.item<float>() == 0.0f;
  loss_scale = ok ? loss_scale : loss_scale / 2;
  return ok;
}

}  // namespace gridrun::runner
