// Model tests: output shapes, parameter counts and FLOPs against hand-computed values.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include "gridrun/runner/errors.hpp"
#include "gridrun/runner/model.hpp"

using namespace gridrun::runner;

namespace {
ModelSpec image(const std::string& name, std::int64_t c = 3, std::int64_t hw = 32) {
  ModelSpec s;
  s.name = name;
  s.channels = c;
  s.height = s.width = hw;
  return s;
}
}  // namespace

TEST(Models, MlpParamsAndFlopsByHand) {
  auto m = make_model(image("mlp"));
  // 3072*256+256 + 256*128+128 + 128*10+10
  EXPECT_EQ(m->parameter_count(), 786688 + 32896 + 1290);
  EXPECT_DOUBLE_EQ(m->flops_per_sample(), 2.0 * (3072 * 256 + 256 * 128 + 128 * 10));
  EXPECT_EQ(m->forward(torch::randn({5, 3, 32, 32})).sizes(), (std::vector<std::int64_t>{5, 10}));
}

TEST(Models, LeNetParamsAndFlopsByHand) {
  auto m = make_model(image("lenet"));
  EXPECT_EQ(m->parameter_count(), 456 + 2416 + 48120 + 10164 + 850);
  // conv1 3*25*6*28*28, conv2 6*25*16*10*10, fc 400*120 + 120*84 + 84*10 multiply-adds
  EXPECT_DOUBLE_EQ(m->flops_per_sample(), 2.0 * (352800 + 240000 + 48000 + 10080 + 840));
  auto mn = make_model(image("lenet", 1, 28));  // MNIST: first conv padded by 2
  EXPECT_EQ(mn->parameter_count(), 156 + 2416 + 48120 + 10164 + 850);
  EXPECT_DOUBLE_EQ(mn->flops_per_sample(), 2.0 * (25 * 6 * 28 * 28 + 240000 + 48000 + 10080 + 840));
  EXPECT_EQ(mn->forward(torch::randn({2, 1, 28, 28})).sizes(), (std::vector<std::int64_t>{2, 10}));
}

TEST(Models, BytesPerSampleByHand) {
  // mlp 3x32x32: weights 820,874 x 4 B amortised over the batch; input 3072 x 4 B; outputs of the
  // three linear layers (256 + 128 + 10) written and read at 4 B.
  auto m = make_model(image("mlp"));
  EXPECT_DOUBLE_EQ(m->activation_elements_per_sample(), 394);
  EXPECT_DOUBLE_EQ(m->input_bytes_per_sample(), 3072 * 4);
  EXPECT_DOUBLE_EQ(m->bytes_per_sample(32), 820874.0 * 4 / 32 + 3072 * 4 + 2 * 4 * 394);
  EXPECT_DOUBLE_EQ(m->bytes_per_sample(1, 2.0), 820874.0 * 4 + 3072 * 4 + 2 * 2 * 394);
  // lenet 3x32x32: conv1 6x28x28, conv2 16x10x10, fc 120, 84, 10.
  auto l = make_model(image("lenet"));
  EXPECT_DOUBLE_EQ(l->activation_elements_per_sample(), 4704 + 1600 + 120 + 84 + 10);
  EXPECT_DOUBLE_EQ(l->bytes_per_sample(1), 62006.0 * 4 + 3072 * 4 + 2 * 4 * 6518);
  // Larger batches amortise the weights: intensity grows with the batch.
  EXPECT_GT(l->flops_per_sample() / l->bytes_per_sample(256), l->flops_per_sample() / l->bytes_per_sample(1));
}

TEST(Models, ResNet18CifarCount) {
  auto m = make_model(image("resnet18"));
  EXPECT_EQ(m->parameter_count(), 11173962);
  // Widely quoted: ~0.56 GMACs for CIFAR ResNet-18.
  EXPECT_NEAR(m->flops_per_sample() / 2 / 1e9, 0.556, 0.01);
  m->eval();
  EXPECT_EQ(m->forward(torch::randn({2, 3, 32, 32})).sizes(), (std::vector<std::int64_t>{2, 10}));
}

TEST(Models, DeepModelsShapesAndKnownCounts) {
  struct Case {
    const char* name;
    std::int64_t params;  // published counts for the CIFAR variants (10 classes)
    double tol;
  };
  for (const Case& c : {Case{"resnet50", 23520842, 0}, Case{"vgg11", 9231114, 0}, Case{"vgg16", 14728266, 0},
                        Case{"densenet121", 6956298, 0}, Case{"alexnet", 0, 0}}) {
    auto m = make_model(image(c.name));
    if (c.params) {
      EXPECT_EQ(m->parameter_count(), c.params) << c.name;
    }
    EXPECT_GT(m->flops_per_sample(), 1e6) << c.name;
    m->eval();
    torch::NoGradGuard ng;
    EXPECT_EQ(m->forward(torch::randn({2, 3, 32, 32})).sizes(), (std::vector<std::int64_t>{2, 10})) << c.name;
    EXPECT_EQ(m->forward(torch::randn({1, 3, 28, 28})).size(1), 10) << c.name << " padded input";
  }
}

TEST(Models, TransformerTokensAndFlops) {
  ModelSpec s;
  s.name = "transformer";
  s.channels = 0;
  s.vocab = 257;
  s.seq_len = 16;
  s.num_classes = 4;
  auto m = make_model(s);
  const double L = 16, d = 128;
  EXPECT_DOUBLE_EQ(m->flops_per_sample(),
                   2.0 * (2 * (4 * L * d * d + 2 * L * L * d + 2 * L * d * 256) + d * 4));
  auto x = torch::randint(0, 257, {3, 16}, torch::kLong);
  EXPECT_EQ(m->forward(x).sizes(), (std::vector<std::int64_t>{3, 4}));
  EXPECT_THROW(make_model(image("transformer")), BadInput);
}

TEST(Models, UnknownNameListsKnown) {
  try {
    make_model(image("resnet9000"));
    FAIL();
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("resnet18"), std::string::npos);
  }
}

// model=torchscript counts its own FLOPs from the operators its forward runs (count_forward_cost).
// The same counter over the built-in models must give their analytic counts: convolutions (with
// padding, stride, groups), linear layers and, for the transformer, the attention products.
TEST(Models, CountedForwardCostMatchesAnalyticCounts) {
  torch::NoGradGuard ng;
  struct Case {
    ModelSpec spec;
    at::Tensor x;
  };
  ModelSpec text;
  text.name = "transformer";
  text.channels = 0;
  text.seq_len = 16;
  std::vector<Case> cases = {{image("mlp"), torch::randn({3, 3, 32, 32})},
                             {image("lenet"), torch::randn({3, 3, 32, 32})},
                             {image("lenet", 1, 28), torch::randn({3, 1, 28, 28})},
                             {image("resnet18"), torch::randn({2, 3, 32, 32})},
                             {image("alexnet"), torch::randn({2, 3, 32, 32})},
                             {text, torch::randint(1, 257, {3, 16}, torch::kLong)}};
  for (auto& c : cases) {
    SCOPED_TRACE(c.spec.name);
    auto m = make_model(c.spec);
    m->eval();
    const ForwardCost cost = count_forward_cost([&] { m->forward(c.x); });
    const double n = static_cast<double>(c.x.size(0));
    EXPECT_NEAR(cost.flops / n, m->flops_per_sample(), 1e-9 * m->flops_per_sample());
    // The built-in transformer also counts its embedding's output (seq_len x 128), which is no
    // product the counter sees.
    const double embedding = c.spec.name == "transformer" ? 16.0 * 128.0 : 0.0;
    EXPECT_NEAR(cost.activation_elements / n, m->activation_elements_per_sample() - embedding,
                1e-9 * m->activation_elements_per_sample());
  }
  // Nothing is counted outside the callable, and a nested count leaves the outer one intact.
  EXPECT_EQ(count_forward_cost([] {}).flops, 0.0);
  auto mlp = make_model(image("mlp"));
  double inner = 0;
  const ForwardCost outer = count_forward_cost([&] {
    inner = count_forward_cost([&] { mlp->forward(torch::randn({1, 3, 32, 32})); }).flops;
    mlp->forward(torch::randn({1, 3, 32, 32}));
  });
  EXPECT_DOUBLE_EQ(inner, mlp->flops_per_sample());
  EXPECT_DOUBLE_EQ(outer.flops, mlp->flops_per_sample());
}
