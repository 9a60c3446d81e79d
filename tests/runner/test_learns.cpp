// Default training learns `dataset: synthetic` (issues 15 and 34): every model of the factory,
// trained in process through the same model/data/loader factories as gridrun-train with the default
// parameters (SGD at the model's default lr, jobs::default_lr: 0.1, lenet 0.05; momentum 0.9, batch
// 32, no weight decay, constant lr), must learn and stay learned: the last epoch's mean training
// loss below the first epoch's and below 2.0 (ln 10 = 2.303 is a model that learned nothing), and a
// test accuracy of at least 0.5 (chance is 0.1; the deep models' bars are below). Before issue 15 mlp ended
// at 2.302 / 0.137 and lenet at 2.266 / 0.173 after 5 default epochs.
//
// mlp and lenet (suite AllModels) run what a default job with `epochs: 5` runs, 5 epochs of 4,096
// samples (640 steps), for two seeds, and must also not oscillate: no epoch may give back more than
// a tenth of what the epochs before it learned (issue 34: lenet at lr 0.1 learned in ~150 steps, then climbed
// back towards ln 10 and fell again, so a test that stopped at 192 steps passed while 5-epoch jobs ended
// at 1.80 / 0.497 on an AMD EPYC). The other models run fewer samples and steps (both are job
// parameters), the deep ones also on smaller images (a test-only option, see DeepModels below).
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <algorithm>
#include <cstdio>
#include <ostream>
#include <string>
#include <vector>

#include "epoch_sampler.hpp"
#include "gridrun/jobs/params.hpp"
#include "gridrun/runner/dataset.hpp"
#include "gridrun/runner/model.hpp"
#include "loader.hpp"
#include "model_cost.hpp"

using namespace gridrun::runner;

namespace {

struct Case {
  const char* model;
  std::int64_t train_samples;  // one epoch = train_samples / batch steps
  std::int64_t steps;          // optimizer steps in all (a whole number of epochs)
  std::int64_t side = 32;      // synthetic image side (DatasetOptions::synthetic_side)
  std::uint64_t seed = 0;      // the job's seed: weights and data order (the data set is fixed)
  bool stable = false;         // also check that no epoch gives back what the earlier ones learned
  // The deep models' bars (DeepModels below): the test accuracy to reach, and how far the last
  // epoch's loss must fall below the first's.
  double min_acc = 0.5;
  double max_loss_ratio = 1.0;
  std::int64_t batch = 32;  // samples per step
};

// ctest names show the model (and a seed other than the default), not the bytes of the case.
std::string name_of(const Case& c) {
  return std::string(c.model) + (c.seed ? "_seed" + std::to_string(c.seed) : "");
}
void PrintTo(const Case& c, std::ostream* os) { *os << name_of(c); }

struct Outcome {
  std::vector<double> epoch_loss;  // mean training loss of each epoch
  double test_acc = 0;
};

Outcome train(const Case& c, std::int64_t test_samples) {
  // One intra-op thread, as a default job (threads_per_rank 1) has: reductions split over another
  // number of threads round differently, and these runs must end the same on every machine
  // whatever its core count (the figures below were measured this way).
  torch::set_num_threads(1);
  DatasetOptions d;
  d.train_samples = c.train_samples;
  d.test_samples = test_samples;
  d.tokens = is_text_model(c.model);
  d.synthetic_side = c.side;
  const DataSplits data = make_dataset(d);
  torch::manual_seed(c.seed);    // as gridrun-train seeds before building
  gridrun::jobs::JobParams job;  // the model a default job of this name builds
  job.model = c.model;
  auto model = make_model(model_spec(job, data.input));
  model->train();
  const double lr = gridrun::jobs::default_lr(c.model, gridrun::jobs::Task::train);
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(lr).momentum(0.9));
  EpochSampler sampler(data.train->size(), c.batch, 0, 1, c.seed);
  LoaderOptions lo;
  lo.steps_per_epoch = sampler.steps_per_epoch();
  Loader loader(
      data.train, [&](std::int64_t e, std::int64_t st) { return sampler.indices(e, st); }, lo);
  Outcome out;
  double sum = 0;
  for (std::int64_t step = 0; step < c.steps; ++step) {
    const Batch b = loader.get(step / lo.steps_per_epoch, step % lo.steps_per_epoch);
    auto loss = torch::nn::functional::cross_entropy(model->forward(b.x), b.y);
    opt.zero_grad();
    loss.backward();
    opt.step();
    sum += loss.item<double>();
    if ((step + 1) % lo.steps_per_epoch == 0) {
      out.epoch_loss.push_back(sum / static_cast<double>(lo.steps_per_epoch));
      sum = 0;
    }
  }
  model->eval();
  torch::NoGradGuard ng;
  std::vector<std::int64_t> all(static_cast<std::size_t>(data.test->size()));
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::int64_t>(i);
  const Batch t = data.test->get(all);
  out.test_acc = model->forward(t.x).argmax(1).eq(t.y).to(torch::kDouble).mean().item<double>();
  return out;
}

class Learns : public ::testing::TestWithParam<Case> {};

}  // namespace

TEST_P(Learns, SyntheticAtDefaultParameters) {
  const Case c = GetParam();
  ASSERT_EQ(c.steps % (c.train_samples / c.batch), 0) << "whole epochs only";
  const Outcome o = train(c, 512);
  std::printf("%s: %lld steps on %lldx%lld, training loss per epoch", name_of(c).c_str(),
              static_cast<long long>(c.steps), static_cast<long long>(c.side),
              static_cast<long long>(c.side));
  for (double l : o.epoch_loss) std::printf(" %.3f", l);
  std::printf(", test accuracy %.3f\n", o.test_acc);
  ASSERT_GE(o.epoch_loss.size(), 2u);
  const double first = o.epoch_loss.front(), last = o.epoch_loss.back();
  EXPECT_LT(last, c.max_loss_ratio * first)
      << name_of(c) << ": the last epoch's loss is not below " << c.max_loss_ratio << " x the first's";
  EXPECT_LT(last, 2.0) << name_of(c);
  EXPECT_GE(o.test_acc, c.min_acc) << name_of(c);
  if (!c.stable) return;
  // No oscillation: no epoch may give back more than a tenth of what the epochs before it learned
  // (first epoch's loss minus the best since). A small rise near a small loss is mini-batch noise;
  // lenet at lr 0.1 gave back far more (gridrun-train, seed 0: 1.647, 0.919, 1.260, ...; seed 1:
  // 1.670, 1.011, 0.975, 1.072, ...), at 0.05 they fell epoch after epoch (docs/runner.md).
  double best = first;
  for (std::size_t e = 1; e < o.epoch_loss.size(); ++e) {
    EXPECT_LE(o.epoch_loss[e], best + 0.1 * (first - best))
        << name_of(c) << ": epoch " << e + 1 << "'s loss rose above the best so far, " << best;
    best = std::min(best, o.epoch_loss[e]);
  }
}

// 5 epochs of the default 4,096 samples (640 steps), seeds 0 and 1, for mlp and lenet; the
// transformer 3 epochs of 2,048. Measured 2026-11-26 on the 2-core VM (1 thread):
// mlp 0.584 0.124 0.041 0.029 0.027 / 0.969 (seed 1: 0.591 ... 0.024 / 0.977), lenet 1.906 0.486
// 0.273 0.216 0.215 / 0.947 (seed 1: 2.028 ... 0.219 / 0.887), transformer 2.204 1.789 1.100 /
// 0.660 (per-epoch training loss / test accuracy); 2.4-3.0 s each through ctest -j2, transformer
// 15 s. At lr 0.1 lenet fails the oscillation check on both seeds (1.680 1.142 1.188 1.348 1.481 /
// 0.605; seed 1 1.819 0.937 1.087 1.237 1.469 / 0.533) while its last epoch is still below its
// first and its accuracy above 0.5: the check is what catches issue 34.
INSTANTIATE_TEST_SUITE_P(AllModels, Learns,
                         ::testing::Values(Case{"mlp", 4096, 640, 32, 0, true},
                                           Case{"mlp", 4096, 640, 32, 1, true},
                                           Case{"lenet", 4096, 640, 32, 0, true},
                                           Case{"lenet", 4096, 640, 32, 1, true},
                                           Case{"transformer", 2048, 192}),
                         [](const ::testing::TestParamInfo<Case>& i) { return name_of(i.param); });

// Registered with ctest under the label `slow` (tests/runner/CMakeLists.txt): they pass, but cost
// seconds to minutes each on 2 CPU cores. Measured 2026-11-26 on the 2-core VM at 1 thread, two
// side by side through ctest (per-epoch training loss / test accuracy): vgg11 1.136 0.440 0.240 /
// 0.814 (30 s), vgg16 1.621 0.866 0.449 / 0.699 (54 s), alexnet 2.360 1.914 1.395 / 0.553 (43 s).
INSTANTIATE_TEST_SUITE_P(SlowModels, Learns,
                         ::testing::Values(Case{"vgg11", 1024, 96}, Case{"vgg16", 1024, 96},
                                           Case{"alexnet", 2048, 192}),
                         [](const ::testing::TestParamInfo<Case>& i) { return name_of(i.param); });

// Registered under `slow` with a one-hour timeout and a high COST (tests/runner/CMakeLists.txt):
// minutes each on 2 CPU cores. What made resnet50 and densenet121 learn is the classifier's input
// norm (docs/runner.md, "Initialisation"); before, resnet50 ended at 2.282 / 0.172 after 64 steps.
// Their cost is the number of samples trained, not the pixels: a step costs about the same at 8x8
// as at 16x16 and half as much at batch 16 (measured 2026-11-26, 1 thread: densenet121 2.9 s per
// step of 32 at 16x16, 2.8 s at 8x8, 1.5 s per step of 16; resnet50 3.6 s per step at 16x16 and
// at 8x8), so the small maps' cost goes with the weights, not the arithmetic (not profiled further).
// Issue 34 cut the steps instead: resnet50 96 (was 128), densenet121 128 (was 192), and resnet18
// learns 16x16 images (was 32x32). At 128 steps densenet121's test accuracy trails its training
// loss (its BatchNorm running statistics lag), so the deep models' bar is a clear fall of the loss
// (the last epoch below 3/4 of the first) and a test accuracy of 0.25, 2.5x chance, where a net
// that learned nothing stays at ln 10 and 0.1. Measured 2026-11-26 on the 2-core VM, 1 thread, two
// side by side through ctest (per-epoch training loss / test accuracy, ctest's seconds):
// resnet18 1.511 0.767 0.419 / 0.732 (132 s), resnet50 1.644 1.204 0.771 / 0.762 (365 s),
// densenet121 2.215 1.745 1.372 1.043 / 0.371 (356 s); before (128 and 192 steps on 16x16, same
// VM under heavier load) resnet50 took 1,029 s and densenet121 1,143 s, about 465 and 570 s of CPU
// (now about 346 and 376 s). resnet18 and resnet50 then went to steps of 16 samples (512 per
// epoch, the same 96 steps: half the samples, half the CPU; 2026-11-29, same VM, ctest -j2:
// resnet18 2.048 1.219 0.741 / 0.510 in 71 s, resnet50 1.884 1.426 0.946 / 0.633 in 211 s).
// densenet121 stays at 32: at 16 its last epoch was 0.77 of its first (1.705 / 2.223), above the bar.
INSTANTIATE_TEST_SUITE_P(DeepModels, Learns,
                         ::testing::Values(Case{"resnet18", 512, 96, 16, 0, false, 0.25, 0.75, 16},
                                           Case{"resnet50", 512, 96, 8, 0, false, 0.25, 0.75, 16},
                                           Case{"densenet121", 1024, 128, 16, 0, false, 0.25, 0.75}),
                         [](const ::testing::TestParamInfo<Case>& i) { return name_of(i.param); });

// Every model of the factory is in one of the three suites.
TEST(Learns, CoversEveryModel) { EXPECT_EQ(model_names().size(), 9u); }
