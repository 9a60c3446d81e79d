// Private to the model files: FLOP bookkeeping and the constructors of the deeper models, which live
// in their own translation unit to keep compile units small.
#pragma once

#include <torch/nn/modules/batchnorm.h>

#include "gridrun/runner/model.hpp"

namespace gridrun::runner::models {

// model=torchscript (models_script.cpp).
std::shared_ptr<Model> make_torchscript(const ModelSpec& s);

// Accumulates multiply-adds (and the output elements of the same layers) while a model is built, following
// the spatial size through the layers.
struct MacCounter {
  static double d(std::int64_t v) { return static_cast<double>(v); }  // counts are far below 2^53
  double macs = 0;
  void conv(std::int64_t cin, std::int64_t cout, std::int64_t k, std::int64_t hout, std::int64_t wout,
            std::int64_t groups = 1) {
    const std::int64_t per_group = cin / groups;  // input channels each output channel sees
    macs += d(per_group) * d(k) * d(k) * d(cout) * d(hout) * d(wout);
    activations += d(cout) * d(hout) * d(wout);
  }
  void linear(std::int64_t in, std::int64_t out) {
    macs += d(in) * d(out);
    activations += d(out);
  }
  double activations = 0;  // output elements of the counted layers (bytes estimate)
  double flops() const { return 2.0 * macs; }
};

// A model whose costs are what its constructor counted into mac_ (every model here).
class CountedModel : public Model {
 public:
  double flops_per_sample() const override { return mac_.flops(); }
  double activation_elements_per_sample() const override { return mac_.activations; }

 protected:
  MacCounter mac_;
};

inline std::int64_t conv_out(std::int64_t in, std::int64_t k, std::int64_t stride, std::int64_t pad) {
  return (in + 2 * pad - k) / stride + 1;
}

// Initialisation (docs/runner.md, "Initialisation"): a BatchNorm's starting scale (its weight),
// set outside autograd. resnet starts each residual branch's last one at 0 and its last shortcut
// at sqrt(512 / C); vgg and densenet121 start the one before the classifier at kLastBnScale, so
// that the classifier's input starts with a squared norm of about 100 or less.
constexpr double kLastBnScale = 0.1;
inline void set_bn_scale(torch::nn::BatchNorm2dImpl& bn, double scale) {
  torch::NoGradGuard ng;
  bn.weight.fill_(scale);
}

// Zero-pads images smaller than 32x32 to 32x32 (the models defined for CIFAR-sized inputs).
torch::Tensor pad_to_32(const torch::Tensor& x);

std::shared_ptr<Model> make_resnet(const ModelSpec& spec, int depth);
std::shared_ptr<Model> make_densenet121(const ModelSpec& spec);

}  // namespace gridrun::runner::models
