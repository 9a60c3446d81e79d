// Bucketed, overlapped gradient allreduce (see grad_sync.hpp for the contract).
//
// Hook choice (LibTorch 1.13 C++): Tensor::register_hook on a leaf parameter runs as a pre-hook of
// its AccumulateGrad node, i.e. once per backward with the fully summed gradient, on the thread
// that runs backward (the caller's thread on CPU). We copy that gradient into the bucket buffer
// (the hook returns nothing, so accumulation into .grad is unchanged) and later overwrite .grad
// with the average. The copy-in/copy-out costs two memcpy of the model per step, far below the
// reduction itself, and avoids relying on internal grad-accumulator APIs.
#include "gridrun/runner/grad_sync.hpp"

#include <ATen/ATen.h>

#include <chrono>

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

  std::vector<at::Tensor> params;
  Communicator& comm;
  GradSyncOptions opts;
  std::vector<Bucket> buckets;
  std::vector<std::pair<std::size_t, std::size_t>> where;  // param -> (bucket, slot)
  std::vector<bool> got;                                  // param received its gradient this step
  std::size_t next_launch = 0;
  bool active = false;

  Impl(std::vector<at::Tensor> p, Communicator& c, GradSyncOptions o)
      : params(std::move(p)), comm(c), opts(o) {
    if (comm.size() == 1) return;
    const double cap = opts.bucket_mb * 1024.0 * 1024.0;
    where.resize(params.size());
    got.assign(params.size(), false);
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
      bytes += static_cast<double>(p.numel()) * p.element_size();
      if (bytes >= cap) close();
    }
    close();
    if (opts.overlap) {
      for (std::size_t k = 0; k < params.size(); ++k) {
        if (!params[k].requires_grad()) continue;
        params[k].register_hook([this, k](const at::Tensor& g) { on_grad(k, g); });
      }
    }
  }

  void on_grad(std::size_t k, const at::Tensor& g) {
    if (!active) return;  // backward outside a training step (never in gridrun-train)
    auto [b, s] = where[k];
    Bucket& bk = buckets[b];
    const Slot& sl = bk.slots[s];
    bk.flat.narrow(0, sl.offset, sl.numel).copy_(g.reshape({-1}));
    if (!got[k]) {
      got[k] = true;
      --bk.pending;
    }
    launch_ready();
  }

  void launch_ready() {
    while (next_launch < buckets.size() && buckets[next_launch].pending == 0) {
      buckets[next_launch].work = comm.allreduce_sum(buckets[next_launch].flat);
      ++next_launch;
    }
  }

  void begin_step() {
    if (buckets.empty()) return;
    for (auto& b : buckets) {
      b.pending = b.slots.size();
      b.work.reset();
    }
    std::fill(got.begin(), got.end(), false);
    next_launch = 0;
    active = opts.overlap;
  }

  GradSyncStats finish() {
    GradSyncStats st;
    if (buckets.empty()) return st;
    active = false;
    // Gradients that no hook delivered (overlap off, or a parameter unused this step): copy from
    // .grad (zeros when absent) so the bucket is complete.
    for (auto& b : buckets) {
      for (auto& sl : b.slots) {
        if (got[sl.param]) continue;
        auto dst = b.flat.narrow(0, sl.offset, sl.numel);
        const auto& g = params[sl.param].grad();
        if (g.defined()) dst.copy_(g.reshape({-1}));
        else dst.zero_();
        got[sl.param] = true;
        --b.pending;
      }
    }
    launch_ready();
    const auto t0 = Clock::now();
    for (auto& b : buckets) b.work->wait();
    st.exposed_s = since(t0);
    const double inv = 1.0 / comm.size();
    for (auto& b : buckets) {
      st.comm_s += b.work->seconds();
      b.flat.mul_(inv);
      for (auto& sl : b.slots) {
        auto& p = params[sl.param];
        auto src = b.flat.narrow(0, sl.offset, sl.numel).view(p.sizes());
        if (p.grad().defined()) p.mutable_grad().copy_(src);
        else p.mutable_grad() = src.clone();
      }
    }
    return st;
  }
};

GradSync::GradSync(std::vector<at::Tensor> params, Communicator& comm, GradSyncOptions opts)
    : impl_(std::make_unique<Impl>(std::move(params), comm, opts)) {}
GradSync::~GradSync() = default;
void GradSync::begin_step() { impl_->begin_step(); }
GradSyncStats GradSync::finish() { return impl_->finish(); }
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
