// Models, chosen by name. Every model is a torch::nn::Module that also knows its own cost: the
// parameter count and the analytic forward FLOPs per sample, which the results file turns into
// achieved FLOP/s (and MFU on GPUs).
//
// FLOP convention: one multiply-add = 2 FLOPs; counted for convolutions, linear layers and the
// attention matrix products; biases, normalisation, activations, pooling and softmax are left out
// (they are < 1 % for these models). Training FLOPs per sample are taken as 3x forward.
//
// Bytes convention (arithmetic intensity = FLOPs / bytes, the x axis of a roofline): one forward
// pass of a batch of B reads the weights once (amortised: parameter bytes / B per sample), reads
// the input sample once, and writes then reads again the output of every layer whose FLOPs are
// counted (convolutions, linear layers, attention products), at the activation precision. Caches,
// in-place activations, pooling and normalisation traffic are not modelled: this is an estimate of
// the compulsory traffic, like the FLOP count is of the compulsory work.
#pragma once

#include <ATen/core/ivalue.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/linear.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace gridrun::runner {

// What the data set tells the model about its input.
struct ModelSpec {
  std::string name;
  std::int64_t channels = 3, height = 32, width = 32;  // image inputs
  std::int64_t num_classes = 10;
  std::int64_t vocab = 257, seq_len = 128;  // token inputs (text)
  // mlp only: hidden layer sizes (grid parameter `mlp_hidden`, e.g. "256,128,100": the
  // Fashion-MNIST benchmark's published MLP row). Layers are named fc1, fc2, ... in this order.
  std::vector<std::int64_t> mlp_hidden = {256, 128};
  // torchscript only: the archive, and the SHA-256 the planner recorded (empty: not checked).
  std::string file, sha256;
};

// What one forward pass costs, by the FLOP and bytes conventions above.
struct ForwardCost {
  double flops = 0;
  double activation_elements = 0;
};
// Runs `fn` (one forward pass, on this thread) and counts, from the shapes LibTorch's
// RecordFunction reports, the FLOPs and output elements of the counted operators it runs:
// convolutions, linear layers and matrix products (mm, bmm, matmul, addmm, baddbmm), and scaled
// dot-product attention; an operator inside a counted one is part of it. How model=torchscript
// knows its own cost (tests check it against the built-in models' analytic counts).
ForwardCost count_forward_cost(const std::function<void()>& fn);

namespace models {
struct MacCounter;
}

class Model : public torch::nn::Module {
 public:
  // Images: [N, C, H, W] float; text: [N, seq_len] int64 token ids. Returns logits [N, classes].
  virtual torch::Tensor forward(const torch::Tensor& x) = 0;
  virtual double flops_per_sample() const = 0;
  // Elements of the outputs of the FLOP-counted layers for one sample (see the bytes convention).
  virtual double activation_elements_per_sample() const = 0;
  // Bytes of one input sample as the data set delivers it (float32 images, int64 token ids).
  double input_bytes_per_sample() const;
  // Estimated bytes moved per sample by one forward pass over a batch of `batch` samples, with
  // activations of `activation_bytes` bytes each (4 for fp32, 2 for bf16/fp16).
  double bytes_per_sample(std::int64_t batch, double activation_bytes = 4.0) const;
  std::int64_t parameter_count() const;
  // Bytes of parameters (weights read once per forward; a lower bound of memory traffic).
  std::int64_t parameter_bytes() const;

  // What quantize_linear_int8 did, read back from the packed weights forward() will use (so a
  // quantizer that kept fp32 weights shows as weights_changed 0; tests/runner/scenarios.py).
  struct Int8Summary {
    std::int64_t layers = 0;           // linear layers quantized
    std::int64_t weights = 0;          // weight elements in them
    std::int64_t weights_changed = 0;  // of those, how many differ from fp32 once dequantized
  };
  // Inference with quantize=int8: from now on the linear layers that forward() runs through
  // linear() use dynamically quantized int8 weights (per-tensor symmetric; activations quantized
  // per batch by LibTorch's quantized::linear_dynamic, CPU). Throws BadInput when this LibTorch
  // has no quantized engine.
  Int8Summary quantize_linear_int8();

 protected:
  // Every model calls its own nn::Linear layers through this, so quantization can swap them.
  torch::Tensor linear(const torch::nn::Linear& layer, const torch::Tensor& x);
  // A fully connected stack in -> sizes[0] -> ... -> sizes.back(), registered as fc1, fc2, ...
  // (mlp, and lenet's classifier); fc_stack runs it with ReLU between layers, none after the last.
  std::vector<torch::nn::Linear> add_fc_stack(std::int64_t in, const std::vector<std::int64_t>& sizes,
                                              models::MacCounter& mac);
  torch::Tensor fc_stack(const std::vector<torch::nn::Linear>& layers, torch::Tensor x);

 private:
  std::map<const void*, c10::IValue> int8_;  // LinearImpl -> packed int8 weights (prepacked)
  friend std::shared_ptr<Model> make_model(const ModelSpec& spec);
  double input_bytes_ = 0;
};

// Throws BadInput naming the model and the known names for an unknown name, or when the model
// cannot take the data set's input (e.g. transformer on images). model=torchscript loads
// spec.file (models_script.cpp): a damaged archive, a changed file (sha256), a forward that does
// not take the input or does not return [batch, classes] are BadInput naming the file.
std::shared_ptr<Model> make_model(const ModelSpec& spec);
const std::vector<std::string>& model_names();
// The `mlp_hidden` grid parameter ("256,128,100") as ModelSpec::mlp_hidden; throws BadInput naming
// the parameter for an empty list, a non-integer or a size < 1.
std::vector<std::int64_t> parse_mlp_hidden(const std::string& text);
// True for built-in models that take token ids rather than images (torchscript: the data decides).
bool is_text_model(const std::string& name);

}  // namespace gridrun::runner
