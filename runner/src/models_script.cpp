// model=torchscript (issue 33): the user's own network, a TorchScript archive saved with
// torch.jit.save, trained exactly like the built-in models.
//
// Why a mirror of the module tree: the trainer, the gradient buckets, the broadcast of rank 0's
// weights, checkpoints and the --init-out export all walk a torch::nn::Module. TorchScriptModel
// registers the archive's own parameter and buffer tensors (the same TensorImpls, not copies) in
// plain nn::Module children named like the archive's submodules, so every one of those paths sees
// the user's tensors under their PyTorch state_dict names ("layer1.0.conv1.weight"), an
// optimizer step or a device move changes what the scripted forward reads, and nothing in the
// trainer knows a TorchScript model from a built-in one.
//
// Why the archive is checked before torch::jit::load: a damaged file must be rejected, not crash
// (archive_check.hpp says what LibTorch's reader does with one). Why one trial forward on rank 0's
// data shape while building: it is the only way to know the forward takes the data set's input and
// returns [batch, classes], and the same pass counts the FLOPs (count_forward_cost), so a bad model
// is exit 2 before any rank trains.
// LibTorch is built with NDEBUG, and RecordFunction::inputs() (an inline accessor) checks a
// debug-only flag such a build never sets (the byte is padding there): this file reads the header
// as the library was built, in every build type (the sanitizer lane compiles without NDEBUG; UBSan
// reported the flag's load). It has no assert() of its own.
#ifndef NDEBUG
#define NDEBUG 1
#endif
#include <ATen/record_function.h>
#include <torch/csrc/jit/api/module.h>
#include <torch/script.h>

#include <cstdio>
#include <string>

#include "archive_check.hpp"
#include "gridrun/base/sha256.hpp"
#include "gridrun/runner/errors.hpp"
#include "models_internal.hpp"

namespace gridrun::runner {

namespace {

// What count_forward_cost adds up on the thread that runs the forward. RecordFunction callbacks are
// plain function pointers (no closure), so the tally they add to is reached through this
// thread-local slot, set only while count_forward_cost runs.
struct Tally {
  ForwardCost cost;
  int depth = 0;  // > 0 inside a counted operator: what it calls is part of it
};
Tally*& current_tally() {
  static thread_local Tally* t = nullptr;
  return t;
}

double numel(const c10::IValue& v) { return v.isTensor() ? static_cast<double>(v.toTensor().numel()) : 0.0; }
std::vector<std::int64_t> sizes(const c10::IValue& v) {
  return v.isTensor() ? v.toTensor().sizes().vec() : std::vector<std::int64_t>{};
}
double prod(const std::vector<std::int64_t>& s, std::size_t from, std::size_t to) {
  double p = 1;
  for (std::size_t i = from; i < to && i < s.size(); ++i) p *= static_cast<double>(s[i]);
  return p;
}

// FLOPs and output elements of one counted operator from its inputs (model.hpp's convention:
// a multiply-add is 2 FLOPs). Returns false for an operator that is not counted.
bool cost_of(const std::string& name, c10::ArrayRef<const c10::IValue> in, ForwardCost& c) {
  auto mm = [&](const std::vector<std::int64_t>& a, const std::vector<std::int64_t>& b) {
    // a [..., M, K] x b [..., K, N] with broadcast batch dimensions; 1-D operands are vectors.
    if (a.empty() || b.empty()) return;
    const double k = static_cast<double>(a.back());
    const double m = a.size() >= 2 ? static_cast<double>(a[a.size() - 2]) : 1.0;
    const double n = b.size() >= 2 ? static_cast<double>(b.back()) : 1.0;
    double batch = 1;
    const std::size_t ab = a.size() >= 2 ? a.size() - 2 : 0, bb = b.size() >= 2 ? b.size() - 2 : 0;
    for (std::size_t i = 0; i < std::max(ab, bb); ++i) {
      const std::int64_t x = i < ab ? a[ab - 1 - i] : 1, y = i < bb ? b[bb - 1 - i] : 1;
      batch *= static_cast<double>(std::max(x, y));
    }
    c.flops += 2.0 * batch * m * k * n;
    c.activation_elements += batch * m * n;
  };
  if (name == "aten::mm" || name == "aten::bmm" || name == "aten::matmul") {
    if (in.size() >= 2) mm(sizes(in[0]), sizes(in[1]));
    return true;
  }
  if (name == "aten::addmm" || name == "aten::baddbmm" || name == "aten::addbmm") {
    if (in.size() >= 3) mm(sizes(in[1]), sizes(in[2]));
    return true;
  }
  if (name == "aten::linear") {
    if (in.size() >= 2) {
      const auto w = sizes(in[1]);  // [out, in]
      if (w.size() == 2 && w[1] > 0) {
        const double rows = numel(in[0]) / static_cast<double>(w[1]);
        c.flops += 2.0 * rows * static_cast<double>(w[0] * w[1]);
        c.activation_elements += rows * static_cast<double>(w[0]);
      }
    }
    return true;
  }
  if (name == "aten::convolution" || name == "aten::_convolution") {
    // (input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
    if (in.size() < 9 || !in[0].isTensor() || !in[1].isTensor()) return true;
    const auto x = sizes(in[0]), w = sizes(in[1]);
    const auto stride = in[3].toIntVector(), pad = in[4].toIntVector(), dil = in[5].toIntVector();
    const bool transposed = in[6].toBool();
    const auto outpad = in[7].toIntVector();
    const double groups = static_cast<double>(in[8].toInt());
    const std::size_t sd = x.size() >= 2 ? x.size() - 2 : 0;  // spatial dimensions
    if (w.size() != sd + 2 || stride.size() < sd || pad.size() < sd || dil.size() < sd) return true;
    double out_spatial = 1;
    for (std::size_t i = 0; i < sd; ++i) {
      const std::int64_t k = w[2 + i], n = x[2 + i];
      const std::int64_t o = transposed ? (n - 1) * stride[i] - 2 * pad[i] + dil[i] * (k - 1) +
                                              (i < outpad.size() ? outpad[i] : 0) + 1
                                        : (n + 2 * pad[i] - dil[i] * (k - 1) - 1) / stride[i] + 1;
      out_spatial *= static_cast<double>(std::max<std::int64_t>(o, 0));
    }
    const double batch = static_cast<double>(x[0]), kernel = prod(w, 2, w.size());
    if (transposed) {  // weight [Cin, Cout / groups, k...]
      const double cin = static_cast<double>(w[0]), cout = static_cast<double>(w[1]) * groups;
      c.flops += 2.0 * batch * cin * prod(x, 2, x.size()) * (cout / groups) * kernel;
      c.activation_elements += batch * cout * out_spatial;
    } else {  // weight [Cout, Cin / groups, k...]
      const double cout = static_cast<double>(w[0]), cin_g = static_cast<double>(w[1]);
      c.flops += 2.0 * batch * cout * out_spatial * cin_g * kernel;
      c.activation_elements += batch * cout * out_spatial;
    }
    return true;
  }
  if (name.rfind("aten::scaled_dot_product_attention", 0) == 0 ||
      name.rfind("aten::_scaled_dot_product", 0) == 0) {
    // q [..., L, E], k [..., S, E], v [..., S, Ev]: scores q k^T, then scores v.
    if (in.size() < 3) return true;
    const auto q = sizes(in[0]), k = sizes(in[1]), v = sizes(in[2]);
    if (q.size() < 2 || k.size() < 2 || v.size() < 2) return true;
    const double batch = prod(q, 0, q.size() - 2), l = static_cast<double>(q[q.size() - 2]),
                 e = static_cast<double>(q.back()), s = static_cast<double>(k[k.size() - 2]),
                 ev = static_cast<double>(v.back());
    c.flops += 2.0 * batch * l * s * e + 2.0 * batch * l * s * ev;
    c.activation_elements += batch * l * s + batch * l * ev;
    return true;
  }
  return false;
}

struct Counted : at::ObserverContext {};

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  Tally* t = current_tally();
  if (!t) return nullptr;
  ForwardCost scratch;
  // Inside a counted operator its own calls (convolution -> mkldnn_convolution, linear -> addmm)
  // are part of it: only the depth moves.
  if (!cost_of(fn.name(), fn.inputs(), t->depth > 0 ? scratch : t->cost)) return nullptr;
  ++t->depth;
  return std::make_unique<Counted>();
}

void on_end(const at::RecordFunction& /*fn*/, at::ObserverContext* ctx) {
  if (Tally* t = current_tally(); t && ctx) --t->depth;
}

std::string shape_text(const at::Tensor& t) {
  std::string s = "[";
  for (std::int64_t i = 0; i < t.dim(); ++i) s += (i ? ", " : "") + std::to_string(t.size(i));
  return s + "]";
}

// The line of a LibTorch error that says what went wrong: TorchScript's interpreter puts it last,
// after "The following operation failed..." and a traceback ("RuntimeError: Given groups=1, ...").
std::string brief(const std::exception& e) {
  const auto* c10e = dynamic_cast<const c10::Error*>(&e);
  std::string s = c10e ? c10e->what_without_backtrace() : e.what();
  for (const char* marker : {"RuntimeError: ", "Error: "}) {
    const auto at = s.rfind(marker);
    if (at != std::string::npos && s.find('\n') < at) {
      s = s.substr(at + std::char_traits<char>::length(marker));
      break;
    }
  }
  const auto nl = s.find('\n');
  if (nl != std::string::npos) s.resize(nl);
  if (s.size() > 300) s = s.substr(0, 297) + "...";
  return s;
}

class TorchScriptModel final : public Model {
 public:
  explicit TorchScriptModel(const ModelSpec& s) : file_(s.file) {
    const std::string where = "gridrun-train: model_file " + s.file;
    if (s.file.empty()) throw BadInput("gridrun-train: model=torchscript needs model_file");
    std::string sha;
    try {
      sha = base::sha256_file(s.file);
    } catch (const std::exception& e) {
      throw BadInput("gridrun-train: model_file " + std::string(e.what()));
    }
    if (!s.sha256.empty() && sha != s.sha256)
      throw BadInput(where + " changed since the grid was planned (sha256 " + sha.substr(0, 12) +
                     "..., planned " + s.sha256.substr(0, 12) +
                     "...): plan the grid again, which gives its jobs new ids");
    sha256_ = sha;
    try {
      check_torch_archive(s.file);
    } catch (const std::exception& e) {
      throw BadInput(where + ": not a sound TorchScript archive (" + e.what() +
                     "; expected a file written by torch.jit.save)");
    }
    try {
      module_ = torch::jit::load(s.file, torch::kCPU);
    } catch (const std::exception& e) {
      throw BadInput(where + ": torch::jit::load cannot read it (" + brief(e) +
                     "; expected a file written by torch.jit.save from torch.jit.script or torch.jit.trace)");
    }
    const auto forward = module_.find_method("forward");
    if (!forward) throw BadInput(where + ": the module has no forward method");
    const auto& args = forward->function().getSchema().arguments();
    if (args.size() != 2)
      throw BadInput(where + ": forward takes " + std::to_string(args.size() - 1) +
                     " inputs (expected one tensor: gridrun gives the batch's inputs and computes the "
                     "cross-entropy loss itself)");
    mirror(module_, *this);
    trial_forward(s);
  }

  torch::Tensor forward(const torch::Tensor& x) override { return module_.forward({x}).toTensor(); }
  void train(bool on) override {
    torch::nn::Module::train(on);
    module_.train(on);
  }
  double flops_per_sample() const override { return cost_.flops; }
  double activation_elements_per_sample() const override { return cost_.activation_elements; }
  const std::string& sha256() const { return sha256_; }

 private:
  // The archive's parameters and buffers, registered (the same tensors) in nn::Module children
  // named like its submodules.
  static void mirror(const torch::jit::Module& from, torch::nn::Module& to) {
    for (const auto& p : from.named_parameters(/*recurse=*/false))
      to.register_parameter(p.name, p.value, p.value.requires_grad());
    for (const auto& b : from.named_buffers(/*recurse=*/false)) to.register_buffer(b.name, b.value);
    for (const auto& c : from.named_children()) {
      auto child = std::make_shared<torch::nn::Module>(c.name);
      mirror(c.value, *child);
      to.register_module(c.name, child);
    }
  }

  // One forward of a batch of 2 zeros (images) or 1s (token ids) in eval mode: it must return
  // [2, classes]; its operators are counted. With gradients on, as in training: without them,
  // PyTorch's nn.TransformerEncoder and nn.MultiheadAttention take a fused inference path
  // (_transformer_encoder_layer_fwd) whose projections LibTorch does not report, which counted a
  // BERT-base encoder at two thirds of its training FLOPs.
  void trial_forward(const ModelSpec& s) {
    const bool tokens = s.channels <= 0;
    const at::Tensor x =
        tokens ? at::ones({2, s.seq_len}, at::kLong) : at::zeros({2, s.channels, s.height, s.width});
    const std::string given = (tokens ? "int64 " : "float32 ") + shape_text(x);
    const std::string where = "gridrun-train: model_file " + s.file;
    train(false);
    at::Tensor out;
    try {
      ForwardCost c = count_forward_cost([&] {
        const c10::IValue r = module_.forward({x});
        if (!r.isTensor())
          throw BadInput(where + ": forward returned a " + r.tagKind() +
                         " (expected one tensor of logits [batch, " + std::to_string(s.num_classes) + "])");
        out = r.toTensor().detach();
      });
      cost_ = {c.flops / 2.0, c.activation_elements / 2.0};
    } catch (const BadInput&) {
      throw;
    } catch (const std::exception& e) {
      throw BadInput(where + ": forward does not accept the data set's input " + given + " (" + brief(e) +
                     ")");
    }
    train(true);
    if (out.dim() != 2 || out.size(0) != 2 || out.size(1) != s.num_classes)
      throw BadInput(where + ": forward returned " + shape_text(out) + " for input " + given +
                     " (expected logits [batch, classes] = [2, " + std::to_string(s.num_classes) + "])");
    if (!at::isFloatingType(out.scalar_type()))
      throw BadInput(where + ": forward returned " + std::string(c10::toString(out.scalar_type())) +
                     " (expected floating-point logits)");
  }

  std::string file_, sha256_;
  torch::jit::Module module_;
  ForwardCost cost_;
};

}  // namespace

ForwardCost count_forward_cost(const std::function<void()>& fn) {
  Tally tally;
  Tally* outer = current_tally();
  current_tally() = &tally;
  const auto handle = at::addThreadLocalCallback(
      at::RecordFunctionCallback(on_start, on_end).needsInputs(true).scopes({at::RecordScope::FUNCTION}));
  try {
    fn();
  } catch (...) {
    at::removeCallback(handle);
    current_tally() = outer;
    throw;
  }
  at::removeCallback(handle);
  current_tally() = outer;
  return tally.cost;
}

namespace models {
std::shared_ptr<Model> make_torchscript(const ModelSpec& s) { return std::make_shared<TorchScriptModel>(s); }
}  // namespace models

}  // namespace gridrun::runner
