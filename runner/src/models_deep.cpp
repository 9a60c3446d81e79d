// Deep CNNs with CIFAR-style stems (3x3 stride-1 first convolution, no initial max-pool), the
// variants used for 32x32 inputs: resnet18/resnet50 (He et al. 2016, as in the widely used
// pytorch-cifar definitions: resnet18 has 11,173,962 parameters with 10 classes) and densenet121
// (growth 32, blocks 6-12-24-16, bottleneck 4k, compression 0.5).
#include <cmath>

#include <torch/nn.h>

#include "models_internal.hpp"

namespace gridrun::runner::models {

namespace nn = torch::nn;

namespace {

nn::Conv2d conv(std::int64_t cin, std::int64_t cout, std::int64_t k, std::int64_t stride, std::int64_t pad) {
  return nn::Conv2d(nn::Conv2dOptions(cin, cout, k).stride(stride).padding(pad).bias(false));
}

// Residual block (basic: two 3x3; bottleneck: 1x1 -> 3x3 -> 1x1 with expansion 4). Spatial size is
// tracked by the caller through `h`.
class ResBlockImpl : public nn::Module {
 public:
  ResBlockImpl(std::int64_t in, std::int64_t planes, std::int64_t stride, bool bottleneck, std::int64_t& h,
               MacCounter& mac) {
    const std::int64_t out = bottleneck ? planes * 4 : planes;
    const std::int64_t hin = h;
    const std::int64_t hout = conv_out(h, 3, stride, 1);
    // conv + BatchNorm (+ ReLU but after the last): the block's body, FLOPs at output size ho.
    auto add = [&](std::int64_t cin, std::int64_t cout, std::int64_t k, std::int64_t st, std::int64_t ho,
                   bool relu) {
      body_->push_back(conv(cin, cout, k, st, k / 2));
      body_->push_back(nn::BatchNorm2d(cout));
      if (relu) body_->push_back(nn::Functional(torch::relu));
      mac.conv(cin, cout, k, ho, ho);
    };
    if (bottleneck) {
      add(in, planes, 1, 1, hin, true);
      add(planes, planes, 3, stride, hout, true);
      add(planes, out, 1, 1, hout, false);
    } else {
      add(in, planes, 3, stride, hout, true);
      add(planes, planes, 3, 1, hout, false);
    }
    // The residual branch's last BatchNorm starts with scale 0, so every block starts as the
    // identity (Goyal et al. 2017): deep nets then take lr 0.1 from the first step.
    set_bn_scale(*body_->ptr(body_->size() - 1)->as<nn::BatchNorm2d>(), 0.0);
    register_module("body", body_);
    if (stride != 1 || in != out) {
      shortcut_->push_back(conv(in, out, 1, stride, 0));
      shortcut_->push_back(nn::BatchNorm2d(out));
      mac.conv(in, out, 1, hout, hout);
      has_shortcut_ = true;
    }
    register_module("shortcut", shortcut_);
    h = hout;
  }
  // Sets the scale of the projection shortcut's BatchNorm (a block without one has none to set).
  void scale_shortcut(double scale) {
    if (has_shortcut_) set_bn_scale(*shortcut_->ptr(1)->as<nn::BatchNorm2d>(), scale);
  }
  // LibTorch modules take forward(Tensor) by value (Sequential and AnyModule call it so).
  // NOLINTNEXTLINE(performance-unnecessary-value-param)
  torch::Tensor forward(torch::Tensor x) {
    auto y = body_->forward(x);
    return torch::relu(y + (has_shortcut_ ? shortcut_->forward(x) : x));
  }

 private:
  nn::Sequential body_, shortcut_;
  bool has_shortcut_ = false;
};
TORCH_MODULE(ResBlock);

class ResNet final : public models::CountedModel {
 public:
  ResNet(const ModelSpec& s, int depth) {
    const bool bottleneck = depth >= 50;
    const std::vector<int> blocks = depth == 18 ? std::vector<int>{2, 2, 2, 2} : std::vector<int>{3, 4, 6, 3};
    std::int64_t h = 32;
    stem_->push_back(conv(s.channels, 64, 3, 1, 1));
    stem_->push_back(nn::BatchNorm2d(64));
    stem_->push_back(nn::Functional(torch::relu));
    mac_.conv(s.channels, 64, 3, h, h);
    std::int64_t in = 64;
    const std::int64_t planes[4] = {64, 128, 256, 512};
    for (int stage = 0; stage < 4; ++stage) {
      for (int b = 0; b < blocks[stage]; ++b) {
        const std::int64_t stride = (stage > 0 && b == 0) ? 2 : 1;
        ResBlock block(in, planes[stage], stride, bottleneck, h, mac_);
        in = bottleneck ? planes[stage] * 4 : planes[stage];
        // Every residual branch starts at zero, so at the start the classifier's input is the
        // ReLU of the last stage's projection shortcut, and that BatchNorm's scale sets its norm:
        // 512 channels (resnet18) have a squared norm of ~87 at scale 1 and learn at lr 0.1;
        // resnet50's 2,048 have ~350 and learn slowly (2.15 / 0.23 after 64 steps, PyTorch), the
        // problem of vgg's classifier (docs/runner.md, "Initialisation"). Scale sqrt(512 / C)
        // gives every depth resnet18's norm (resnet50: 0.5, 1.13 / 0.45 after 64 steps).
        if (stage == 3 && b == 0) block->scale_shortcut(std::sqrt(512.0 / static_cast<double>(in)));
        body_->push_back(block);
      }
    }
    fc_ = nn::Linear(in, s.num_classes);
    mac_.linear(in, s.num_classes);
    register_module("stem", stem_);
    register_module("layers", body_);
    register_module("fc", fc_);
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    auto h = body_->forward(stem_->forward(pad_to_32(x)));
    return linear(fc_, h.mean({2, 3}));
  }

 private:
  nn::Sequential stem_, body_;
  nn::Linear fc_{nullptr};
};

class DenseLayerImpl : public nn::Module {
 public:
  DenseLayerImpl(std::int64_t in, std::int64_t growth, std::int64_t h, MacCounter& mac) {
    bn1_ = register_module("bn1", nn::BatchNorm2d(in));
    conv1_ = register_module("conv1", conv(in, 4 * growth, 1, 1, 0));
    bn2_ = register_module("bn2", nn::BatchNorm2d(4 * growth));
    conv2_ = register_module("conv2", conv(4 * growth, growth, 3, 1, 1));
    mac.conv(in, 4 * growth, 1, h, h);
    mac.conv(4 * growth, growth, 3, h, h);
  }
  // LibTorch modules take forward(Tensor) by value (Sequential and AnyModule call it so).
  // NOLINTNEXTLINE(performance-unnecessary-value-param)
  torch::Tensor forward(torch::Tensor x) {
    auto y = conv1_->forward(torch::relu(bn1_->forward(x)));
    y = conv2_->forward(torch::relu(bn2_->forward(y)));
    return torch::cat({x, y}, 1);
  }

 private:
  nn::BatchNorm2d bn1_{nullptr}, bn2_{nullptr};
  nn::Conv2d conv1_{nullptr}, conv2_{nullptr};
};
TORCH_MODULE(DenseLayer);

class TransitionImpl : public nn::Module {
 public:
  TransitionImpl(std::int64_t in, std::int64_t out, std::int64_t h, MacCounter& mac) {
    bn_ = register_module("bn", nn::BatchNorm2d(in));
    conv_ = register_module("conv", conv(in, out, 1, 1, 0));
    mac.conv(in, out, 1, h, h);
  }
  // LibTorch modules take forward(Tensor) by value (Sequential and AnyModule call it so).
  // NOLINTNEXTLINE(performance-unnecessary-value-param)
  torch::Tensor forward(torch::Tensor x) {
    return torch::avg_pool2d(conv_->forward(torch::relu(bn_->forward(x))), 2);
  }

 private:
  nn::BatchNorm2d bn_{nullptr};
  nn::Conv2d conv_{nullptr};
};
TORCH_MODULE(Transition);

class DenseNet final : public models::CountedModel {
 public:
  explicit DenseNet(const ModelSpec& s) {
    const std::int64_t growth = 32;
    const int blocks[4] = {6, 12, 24, 16};
    std::int64_t h = 32, c = 2 * growth;
    body_->push_back(conv(s.channels, c, 3, 1, 1));
    mac_.conv(s.channels, c, 3, h, h);
    for (int b = 0; b < 4; ++b) {
      for (int l = 0; l < blocks[b]; ++l) {
        body_->push_back(DenseLayer(c, growth, h, mac_));
        c += growth;
      }
      if (b < 3) {
        body_->push_back(Transition(c, c / 2, h, mac_));
        c /= 2;
        h /= 2;
      }
    }
    // The last BatchNorm starts with scale 0.1, as vgg's does (docs/runner.md, "Initialisation"):
    // at scale 1 the classifier's 1,024 inputs have a squared norm of ~180 and densenet121 learns
    // slowly at lr 0.1 (loss 1.97 / test accuracy 0.30 after 64 steps; 1.01 / 0.64 after 128 at 0.1).
    nn::BatchNorm2d last(c);
    set_bn_scale(*last, kLastBnScale);
    body_->push_back(last);
    body_->push_back(nn::Functional(torch::relu));
    fc_ = nn::Linear(c, s.num_classes);
    mac_.linear(c, s.num_classes);
    register_module("features", body_);
    register_module("fc", fc_);
  }
  torch::Tensor forward(const torch::Tensor& x) override {
    return linear(fc_, body_->forward(pad_to_32(x)).mean({2, 3}));
  }

 private:
  nn::Sequential body_;
  nn::Linear fc_{nullptr};
};

}  // namespace

std::shared_ptr<Model> make_resnet(const ModelSpec& spec, int depth) {
  return std::make_shared<ResNet>(spec, depth);
}

std::shared_ptr<Model> make_densenet121(const ModelSpec& spec) { return std::make_shared<DenseNet>(spec); }

}  // namespace gridrun::runner::models
