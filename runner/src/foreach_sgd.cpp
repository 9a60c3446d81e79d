// See foreach_sgd.hpp.
#include "foreach_sgd.hpp"

#include <ATen/ATen.h>
#include <torch/utils.h>

#include <memory>
#include <sstream>
#include <string>
#include <type_traits>

namespace gridrun::runner {

namespace {
// The optimizer state map's key for a parameter: LibTorch 1.x keys by the TensorImpl address as
// text, 2.x by the address itself.
template <class Map>
typename Map::key_type state_key(const Map&, const at::Tensor& p) {
  if constexpr (std::is_same_v<typename Map::key_type, std::string>) {
    std::ostringstream os;  // what c10::guts::to_string did in 1.x
    os << static_cast<const void*>(p.unsafeGetTensorImpl());
    return os.str();
  } else
    return p.unsafeGetTensorImpl();
}

}  // namespace

ForeachSgd::ForeachSgd(torch::optim::SGD& opt, std::vector<at::Tensor> params)
    : opt_(opt), params_(std::move(params)) {}

// neg_lr_t is read only in CUDA builds (a captured graph); a CPU build has no graph to replay.
void ForeachSgd::step(double lr, [[maybe_unused]] const at::Tensor& neg_lr_t) {
  torch::NoGradGuard ng;
  const auto& o = static_cast<const torch::optim::SGDOptions&>(opt_.param_groups()[0].options());
  std::vector<at::Tensor> ps, grads, bufs;
  for (auto& p : params_) {
    if (!p.grad().defined()) continue;
    ps.push_back(p);
    grads.push_back(p.grad());
  }
  if (ps.empty()) return;
  if (o.weight_decay() != 0) grads = at::_foreach_add(grads, ps, o.weight_decay());
  if (o.momentum() != 0) {
    auto& state = opt_.state();
    bool first = false;
    for (std::size_t i = 0; i < ps.size(); ++i) {
      auto it = state.find(state_key(state, ps[i]));
      if (it == state.end()) {
        first = true;
        break;
      }
      bufs.push_back(static_cast<torch::optim::SGDParamState&>(*it->second).momentum_buffer());
    }
    if (first) {  // first step: buf = clone(grad), as torch::optim::SGD does
      bufs.clear();
      for (std::size_t i = 0; i < ps.size(); ++i) {
        auto buf = grads[i].clone().detach();
        auto st = std::make_unique<torch::optim::SGDParamState>();
        st->momentum_buffer(buf);
        state[state_key(state, ps[i])] = std::move(st);
        bufs.push_back(buf);
      }
    } else {
      at::_foreach_mul_(bufs, o.momentum());
      at::_foreach_add_(bufs, grads, 1 - o.dampening());
    }
    grads = o.nesterov() ? at::_foreach_add(grads, bufs, o.momentum()) : bufs;
  }
#ifdef GRIDRUN_HAVE_NCCL
  if (neg_lr_t.defined()) {
    at::_foreach_add_(ps, at::_foreach_mul(grads, neg_lr_t));
    return;
  }
#endif
  at::_foreach_add_(ps, grads, -1 * lr);
}

}  // namespace gridrun::runner
