// Bucketed, overlapped gradient allreduce (see grad_sync.hpp for the contract).
//
// Gradients as bucket views (like DDP's gradient_as_bucket_view): each parameter's .grad() is a
// view into its bucket's flat buffer, so backward accumulates straight into the buffer and the
// averaged result is already in .grad() after the reduction: no copy in, no copy out, one scaling
// pass. Readiness comes from a post-hook on each parameter's AccumulateGrad node (it runs after the
// gradient has been added to .grad(), once per backward, on the thread running backward). A
// Tensor::register_hook pre-hook would fire *before* accumulation, i.e. too early for views.
// Consequence: gradients must be zeroed in place (GradSync::zero_grad), never reset or detached,
// which is why the trainer does not call Optimizer::zero_grad on multi-rank jobs; begin_step()
// re-attaches any parameter whose .grad() was replaced by someone else.
#include "grad_sync.hpp"

#include <ATen/ATen.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/function_hook.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/types.h>

#include <chrono>
#include <utility>

namespace gridrun::runner {

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }
}  // namespace

struct GradSync::Impl {
  struct Slot {
    std::size_t param;
    std::int64_t offset, numel;
  };
  struct Bucket {
    std::vector<Slot> slots;
    at::Tensor flat;
    std::size_t pending = 0;
    std::shared_ptr<Work> work;
  };
  // Post-hook on a parameter's gradient accumulator: the gradient is in .grad() now.
  struct ReadyHook final : torch::autograd::FunctionPostHook {
    ReadyHook(Impl* s, std::size_t k) : sync(s), param(k) {}
    torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                              const torch::autograd::variable_list&) override {
      sync->on_ready(param);
      return outputs;
    }
    Impl* sync;
    std::size_t param;
  };

  Impl(std::vector<at::Tensor> p, Communicator& c, GradSyncOptions o);
  void build_buckets();
  void attach_views();
  void register_hooks();
  void on_ready(std::size_t k);
  void launch_ready();
  void begin_step();
  bool zero_grad();
  GradSyncStats finish();

  std::vector<at::Tensor> params;
  Communicator& comm;
  GradSyncOptions opts;
  std::vector<Bucket> buckets;
  std::vector<std::pair<std::size_t, std::size_t>> where;  // param -> (bucket, slot)
  std::vector<at::Tensor> views;                           // param -> its slot of the bucket
  std::vector<bool> got;                                   // param's gradient ready this step
  // Keeps the hooks' nodes alive. The pointer type is whatever grad_accumulator returns:
  // std::shared_ptr up to LibTorch 2.x (Debian's 1.13), c10::intrusive_ptr in the 2.15 wheel.
  using NodePtr = decltype(torch::autograd::impl::grad_accumulator(std::declval<at::Tensor>()));
  std::vector<NodePtr> accumulators;
  std::size_t next_launch = 0;
  bool active = false;
};

GradSync::Impl::Impl(std::vector<at::Tensor> p, Communicator& c, GradSyncOptions o)
    : params(std::move(p)), comm(c), opts(o) {
  if (comm.size() == 1) return;
  where.resize(params.size());
  views.resize(params.size());
  got.assign(params.size(), false);
  build_buckets();
  attach_views();
  if (opts.overlap) register_hooks();
}

// Reverse registration order (roughly the order backward produces gradients), a new bucket once
// the current one holds bucket_mb.
void GradSync::Impl::build_buckets() {
  const double cap = opts.bucket_mb * 1024.0 * 1024.0;
  Bucket cur;
  double bytes = 0;
  auto close = [&] {
    if (cur.slots.empty()) return;
    std::int64_t total = 0;
    for (auto& s : cur.slots) total += s.numel;
    cur.flat = at::zeros({total}, params[cur.slots.front().param].options());
    buckets.push_back(std::move(cur));
    cur = Bucket{};
    bytes = 0;
  };
  for (std::size_t k = params.size(); k-- > 0;) {
    const auto& p = params[k];
    if (!p.requires_grad()) continue;
    std::int64_t off = 0;
    for (auto& s : cur.slots) off += s.numel;
    where[k] = {buckets.size(), cur.slots.size()};
    cur.slots.push_back(Slot{k, off, p.numel()});
    bytes += static_cast<double>(p.numel()) * static_cast<double>(p.element_size());
    if (bytes >= cap) close();
  }
  close();
}

void GradSync::Impl::attach_views() {
  torch::NoGradGuard ng;
  for (auto& b : buckets)
    for (auto& sl : b.slots) {
      // Same strides as the parameter (channels_last weights too): autograd then accumulates
      // into the view in place instead of copying across layouts.
      views[sl.param] = b.flat.narrow(0, sl.offset, sl.numel)
                            .as_strided(params[sl.param].sizes(), params[sl.param].strides());
      params[sl.param].mutable_grad() = views[sl.param];
    }
}

void GradSync::Impl::register_hooks() {
  for (std::size_t k = 0; k < params.size(); ++k) {
    if (!params[k].requires_grad()) continue;
    auto acc = torch::autograd::impl::grad_accumulator(params[k]);
    acc->add_post_hook(std::make_unique<ReadyHook>(this, k));
    accumulators.push_back(std::move(acc));
  }
}

void GradSync::Impl::on_ready(std::size_t k) {
  if (!active || got[k]) return;
  got[k] = true;
  Bucket& bk = buckets[where[k].first];
  if (--bk.pending == 0) launch_ready();
}

void GradSync::Impl::launch_ready() {
  while (next_launch < buckets.size() && buckets[next_launch].pending == 0) {
    buckets[next_launch].work = comm.allreduce_sum(buckets[next_launch].flat);
    ++next_launch;
  }
}

void GradSync::Impl::begin_step() {
  if (buckets.empty()) return;
  for (auto& b : buckets) {
    b.pending = b.slots.size();
    b.work.reset();
    for (auto& sl : b.slots) {
      auto& p = params[sl.param];
      if (!p.grad().defined() || p.grad().data_ptr() != views[sl.param].data_ptr()) {
        views[sl.param].zero_();
        p.mutable_grad() = views[sl.param];
      }
    }
  }
  std::fill(got.begin(), got.end(), false);
  next_launch = 0;
  active = opts.overlap;
}

bool GradSync::Impl::zero_grad() {
  if (buckets.empty()) return false;
  for (auto& b : buckets) b.flat.zero_();
  return true;
}

GradSyncStats GradSync::Impl::finish() {
  GradSyncStats st;
  if (buckets.empty()) return st;
  active = false;
  // Buckets not launched by hooks (overlap off, or a parameter without gradient this step, whose
  // slot simply stays zero) are complete now that backward has returned.
  for (auto& b : buckets) b.pending = 0;
  launch_ready();
  const auto t0 = Clock::now();
  for (auto& b : buckets) b.work->wait();
  st.exposed_s = since(t0);
  const double inv = 1.0 / comm.size();
  for (auto& b : buckets) {
    st.comm_s += b.work->seconds();
    b.flat.mul_(inv);
  }
  return st;
}

GradSync::GradSync(std::vector<at::Tensor> params, Communicator& comm, GradSyncOptions opts)
    : impl_(std::make_unique<Impl>(std::move(params), comm, opts)) {}
GradSync::~GradSync() = default;
void GradSync::begin_step() { impl_->begin_step(); }
GradSyncStats GradSync::finish() { return impl_->finish(); }
bool GradSync::zero_grad() { return impl_->zero_grad(); }
std::size_t GradSync::num_buckets() const { return impl_->buckets.size(); }
std::vector<std::vector<std::size_t>> GradSync::layout() const {
  std::vector<std::vector<std::size_t>> out;
  for (auto& b : impl_->buckets) {
    out.emplace_back();
    for (auto& s : b.slots) out.back().push_back(s.param);
  }
  return out;
}

}  // namespace gridrun::runner
