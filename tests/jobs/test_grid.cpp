// Unit tests of grid loading: product sizes, order, zip, sample, exclude, include, seeds, derived batch
// fields, id stability, and every validation error's message and location.
#include <gtest/gtest.h>

#include <stdlib.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <stdexcept>
#include <tuple>

#include "gridrun/jobs/command.hpp"
#include "gridrun/jobs/grid.hpp"
#include "gridrun/jobs/select.hpp"

namespace gj = gridrun::jobs;

namespace {

gj::Expansion load(const std::string& yaml, const gj::LoadOptions& opts = {}) {
  return gj::load_grid_string(yaml, "grid.yaml", opts);
}

// The full what() of the GridError a grid raises, or "no error".
std::string error_of(const std::string& yaml) {
  try {
    load(yaml);
  } catch (const gj::GridError& e) {
    return e.what();
  }
  return "no error";
}

std::string str(const gj::Job& j, const char* k) { return std::get<std::string>(gj::get_param(j.params, k)); }
std::int64_t i64(const gj::Job& j, const char* k) {
  return std::get<std::int64_t>(gj::get_param(j.params, k));
}
double dbl(const gj::Job& j, const char* k) { return std::get<double>(gj::get_param(j.params, k)); }

}  // namespace

// ---- expansion -------------------------------------------------------------------------------

TEST(JobsGridExpand, NoGridIsOneDefaultJob) {
  auto ex = load("name: one\n");
  ASSERT_EQ(ex.jobs.size(), 1u);
  EXPECT_EQ(ex.name, "one");
  EXPECT_EQ(ex.source, "grid.yaml");
  EXPECT_EQ(ex.jobs[0].params, gj::JobParams{});
  EXPECT_TRUE(ex.varying.empty());
  EXPECT_TRUE(ex.warnings.empty());
}

TEST(JobsGridExpand, ProductSizeAndOrder) {
  auto ex = load(
      "name: p\n"
      "grid:\n"
      "  model: [mlp, lenet]\n"
      "  ranks: [1, 2, 3]\n"
      "  lr: [0.1, 0.2]\n");
  ASSERT_EQ(ex.jobs.size(), 12u);
  // Last key fastest.
  EXPECT_EQ(str(ex.jobs[0], "model"), "mlp");
  EXPECT_EQ(i64(ex.jobs[0], "ranks"), 1);
  EXPECT_EQ(dbl(ex.jobs[0], "lr"), 0.1);
  EXPECT_EQ(dbl(ex.jobs[1], "lr"), 0.2);
  EXPECT_EQ(i64(ex.jobs[2], "ranks"), 2);
  EXPECT_EQ(str(ex.jobs[6], "model"), "lenet");
  for (std::size_t i = 0; i < ex.jobs.size(); ++i) {
    EXPECT_EQ(ex.jobs[i].index, i);
    EXPECT_EQ(ex.jobs[i].run, "p");
  }
  EXPECT_EQ(ex.varying, (std::vector<std::string>{"model", "global_batch", "lr", "ranks"}));
}

TEST(JobsGridExpand, ZipVariesTogetherAsOneAxisAfterGrid) {
  auto ex = load(
      "name: z\n"
      "zip:\n"
      "  lr: [0.1, 0.2, 0.4]\n"
      "  warmup_steps: [0, 100, 200]\n"
      "grid:\n"
      "  ranks: [1, 2]\n");
  ASSERT_EQ(ex.jobs.size(), 6u);
  const double lrs[] = {0.1, 0.2, 0.4};
  const std::int64_t warm[] = {0, 100, 200};
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(i64(ex.jobs[i], "ranks"), i < 3 ? 1 : 2);  // zip varies faster than grid keys
    EXPECT_EQ(dbl(ex.jobs[i], "lr"), lrs[i % 3]);
    EXPECT_EQ(i64(ex.jobs[i], "warmup_steps"), warm[i % 3]);
  }
}

TEST(JobsGridExpand, SeedsInnermost) {
  auto ex = load("name: s\ngrid: {model: [mlp, lenet]}\nseeds: [0, 1, 2]\n");
  ASSERT_EQ(ex.jobs.size(), 6u);
  for (std::size_t i = 0; i < 6; ++i) {
    EXPECT_EQ(i64(ex.jobs[i], "seed"), static_cast<std::int64_t>(i % 3));
    EXPECT_EQ(str(ex.jobs[i], "model"), i < 3 ? "mlp" : "lenet");
  }
}

TEST(JobsGridExpand, IssueExampleCounts) {
  auto ex = load(
      "name: cpu-vs-gpu\n"
      "defaults: {model: resnet18, dataset: synthetic, epochs: 2, optimizer: sgd, lr: 0.1}\n"
      "grid:\n"
      "  device: [cpu, gpu]\n"
      "  ranks: [1, 2, 4]\n"
      "  batch_per_rank: [32, 128]\n"
      "zip:\n"
      "  lr: [0.1, 0.2]\n"
      "  warmup_steps: [0, 100]\n"
      "exclude:\n"
      "  - {device: cpu, ranks: 4}\n"
      "include:\n"
      "  - {model: mlp, device: cpu, ranks: 1, batch_per_rank: 64}\n"
      "seeds: [0, 1, 2]\n");
  // 2*3*2 grid * 2 zip * 3 seeds = 72; the exclude drops cpu x 4 ranks (2*2*3 = 12); + 1 include
  // x 3.
  EXPECT_EQ(ex.jobs.size(), 72u - 12u + 3u);
  EXPECT_EQ(ex.excluded, 12u);
  for (const auto& j : ex.jobs) EXPECT_FALSE(str(j, "device") == "cpu" && i64(j, "ranks") == 4) << j.id;
  const gj::Job& last = ex.jobs.back();
  EXPECT_EQ(str(last, "model"), "mlp");
  EXPECT_EQ(i64(last, "epochs"), 2);  // merged over defaults
  EXPECT_EQ(i64(last, "seed"), 2);    // crossed with seeds
  EXPECT_TRUE(ex.warnings.empty());
}

TEST(JobsGridExpand, ExcludeListMeansAnyOfAndSeesDerivedValues) {
  auto ex = load(
      "name: e\n"
      "defaults: {batch_per_rank: 32}\n"
      "grid: {ranks: [1, 2, 3, 4], model: [mlp, lenet]}\n"
      "exclude:\n"
      "  - {ranks: [2, 3], model: lenet}\n"
      "  - {global_batch: 128}\n");
  // 8 jobs; drop lenet x {2,3} (2) and global_batch 128 = ranks 4 (2).
  EXPECT_EQ(ex.jobs.size(), 4u);
  EXPECT_EQ(ex.excluded, 4u);
}

TEST(JobsGridExpand, ExcludeThatMatchesNothingWarnsWithLocation) {
  auto ex = load(
      "name: e\n"
      "grid: {ranks: [1, 2]}\n"
      "exclude:\n"
      "  - {model: vgg16}\n");
  EXPECT_EQ(ex.jobs.size(), 2u);
  ASSERT_EQ(ex.warnings.size(), 1u);
  EXPECT_EQ(ex.warnings[0], "grid.yaml:4:5: exclude[0]: matches no job");
}

TEST(JobsGridExpand, ExcludeDoesNotApplyToIncludes) {
  auto ex = load(
      "name: e\n"
      "grid: {model: [mlp, lenet]}\n"
      "exclude: [{model: lenet}]\n"
      "include: [{model: lenet, lr: 0.5}]\n");
  ASSERT_EQ(ex.jobs.size(), 2u);
  EXPECT_EQ(str(ex.jobs[1], "model"), "lenet");
  EXPECT_EQ(dbl(ex.jobs[1], "lr"), 0.5);
}

TEST(JobsGridExpand, IncludeOnlyHasNoProductJob) {
  auto ex = load(
      "name: i\n"
      "defaults: {epochs: 3}\n"
      "include:\n"
      "  - {model: lenet}\n"
      "  - {model: vgg11, seed: 7}\n"
      "seeds: [1, 2]\n");
  // lenet x seeds 1,2; vgg11 keeps its own seed.
  ASSERT_EQ(ex.jobs.size(), 3u);
  EXPECT_EQ(str(ex.jobs[0], "model"), "lenet");
  EXPECT_EQ(i64(ex.jobs[0], "seed"), 1);
  EXPECT_EQ(i64(ex.jobs[1], "seed"), 2);
  EXPECT_EQ(str(ex.jobs[2], "model"), "vgg11");
  EXPECT_EQ(i64(ex.jobs[2], "seed"), 7);
  for (const auto& j : ex.jobs) EXPECT_EQ(i64(j, "epochs"), 3);
}

TEST(JobsGridExpand, DerivedBatchFields) {
  auto ex = load("name: b\ndefaults: {batch_per_rank: 16}\ngrid: {ranks: [1, 2, 4]}\n");
  ASSERT_EQ(ex.jobs.size(), 3u);
  for (const auto& j : ex.jobs) {
    EXPECT_EQ(i64(j, "batch_per_rank"), 16);
    EXPECT_EQ(i64(j, "global_batch"), 16 * i64(j, "ranks"));
  }
  ex = load("name: b\ndefaults: {global_batch: 256}\ngrid: {ranks: [1, 2, 4]}\n");
  for (const auto& j : ex.jobs) {
    EXPECT_EQ(i64(j, "global_batch"), 256);
    EXPECT_EQ(i64(j, "batch_per_rank"), 256 / i64(j, "ranks"));
  }
  // Neither given: batch_per_rank's default 32 holds.
  ex = load("name: b\ngrid: {ranks: [2]}\n");
  EXPECT_EQ(i64(ex.jobs[0], "batch_per_rank"), 32);
  EXPECT_EQ(i64(ex.jobs[0], "global_batch"), 64);
  // A later layer's batch key replaces an earlier layer's other one.
  ex = load(
      "name: b\n"
      "defaults: {batch_per_rank: 8}\n"
      "grid: {global_batch: [64], ranks: [2]}\n"
      "include: [{global_batch: 64, ranks: 4}, {ranks: 4}]\n");
  ASSERT_EQ(ex.jobs.size(), 3u);
  EXPECT_EQ(i64(ex.jobs[0], "batch_per_rank"), 32);
  EXPECT_EQ(i64(ex.jobs[1], "batch_per_rank"), 16);
  EXPECT_EQ(i64(ex.jobs[2], "batch_per_rank"), 8);
  EXPECT_EQ(i64(ex.jobs[2], "global_batch"), 32);  // defaults' batch_per_rank 8 x 4 ranks
}

TEST(JobsGridExpand, DuplicatesDroppedWithWarning) {
  auto ex = load(
      "name: d\n"
      "grid: {ranks: [1, 2, 1]}\n"
      "include: [{ranks: 2}]\n");
  ASSERT_EQ(ex.jobs.size(), 2u);
  EXPECT_EQ(ex.duplicates, 2u);
  ASSERT_EQ(ex.warnings.size(), 2u);
  EXPECT_EQ(ex.warnings[0],
            "grid.yaml:2:1: grid: 1 duplicate job dropped (e.g. " + ex.jobs[0].id + ", same as job 0)");
  EXPECT_EQ(ex.warnings[1], "grid.yaml:3:11: include[0]: 1 duplicate job dropped (e.g. " + ex.jobs[1].id +
                                ", same as job 1)");
  std::set<std::string> ids;
  for (const auto& j : ex.jobs) EXPECT_TRUE(ids.insert(j.id).second);
}

TEST(JobsGridExpand, SameJobSpelledDifferentlyIsADuplicate) {
  // batch_per_rank 32 x 2 ranks and global_batch 64 x 2 ranks resolve to the same job.
  auto ex = load(
      "name: d\n"
      "include:\n"
      "  - {ranks: 2, batch_per_rank: 32, lr: 0.1}\n"
      "  - {lr: 1e-1, global_batch: 64, ranks: 2}\n");
  EXPECT_EQ(ex.jobs.size(), 1u);
  EXPECT_EQ(ex.duplicates, 1u);
}

// Issue 34: a training job of lenet that sets no lr gets 0.05 (jobs::default_lr), written into the
// job so its id is that of `lr: 0.05`; a written lr, another model or an inference job keeps its own.
TEST(JobsGridExpand, LenetTrainingDefaultsToItsOwnLr) {
  // The product reuses one draft: mlp after lenet must get 0.1 back.
  auto ex = load("name: a\ngrid: {model: [mlp, lenet, mlp]}\n");
  ASSERT_EQ(ex.jobs.size(), 2u);  // the second mlp is a duplicate
  EXPECT_DOUBLE_EQ(dbl(ex.jobs[0], "lr"), 0.1);
  EXPECT_DOUBLE_EQ(dbl(ex.jobs[1], "lr"), 0.05);
  auto written = load("name: b\ndefaults: {model: lenet, lr: 0.05}\n");
  EXPECT_EQ(ex.jobs[1].id, written.jobs[0].id);
  EXPECT_EQ(ex.jobs[1].id, gj::job_id(ex.jobs[1].params));
  auto kept = load("name: c\ndefaults: {lr: 0.1}\ngrid: {model: [lenet]}\n");
  EXPECT_DOUBLE_EQ(dbl(kept.jobs[0], "lr"), 0.1);
  auto inc = load("name: d\ninclude: [{model: lenet}, {model: lenet, task: inference}]\n");
  ASSERT_EQ(inc.jobs.size(), 2u);
  EXPECT_DOUBLE_EQ(dbl(inc.jobs[0], "lr"), 0.05);
  EXPECT_DOUBLE_EQ(dbl(inc.jobs[1], "lr"), 0.1);
  gj::LoadOptions set;  // --set lr=0.1 is the user's value too
  set.overrides = {{"lr", gj::Value{0.1}}};
  EXPECT_DOUBLE_EQ(dbl(load("name: e\ndefaults: {model: lenet}\n", set).jobs[0], "lr"), 0.1);
}

TEST(JobsGridExpand, IdsStableUnderReorderingAndNumberSpelling) {
  auto a = load(
      "name: a\n"
      "defaults: {model: lenet, lr: 0.10, epochs: 2, train_samples: 1000}\n"
      "grid: {ranks: [1, 2]}\n");
  auto b = load(
      "name: other-name\n"
      "grid:\n"
      "  ranks: [1, 2]\n"
      "defaults:\n"
      "  train_samples: 1e3\n"
      "  epochs: 2\n"
      "  lr: 1e-1\n"
      "  model: lenet\n");
  auto c = load(
      "name: c\n"
      "include:\n"
      "  - {ranks: 2, lr: 0.1, model: lenet, epochs: 2.0, train_samples: 1000, seed: 0}\n");
  ASSERT_EQ(a.jobs.size(), 2u);
  ASSERT_EQ(b.jobs.size(), 2u);
  EXPECT_EQ(a.jobs[0].id, b.jobs[0].id);
  EXPECT_EQ(a.jobs[1].id, b.jobs[1].id);
  EXPECT_NE(a.jobs[0].id, a.jobs[1].id);
  EXPECT_EQ(c.jobs[0].id, a.jobs[1].id);
  EXPECT_EQ(a.jobs[1].id, gj::job_id(a.jobs[1].params));
}

TEST(JobsGridExpand, EveryIdIsTheHashOfItsParams) {
  // The expander builds canonical JSON from pre-rendered pieces; it must equal canonical_json().
  auto ex = load(
      "name: ids\n"
      "defaults: {data_dir: \"/data/\\\"quoted\\\" \\\\ dir\\t\", time_limit: \"1-00:00\"}\n"
      "grid:\n"
      "  ranks: [1, 2, 3]\n"
      "  lr: [1e-3, 0.1, 2]\n"
      "  momentum: [0, 0.95]\n"
      "zip: {global_batch: [6, 12], scale_lr: [yes, false]}\n"
      "include: [{batch_per_rank: 5, ranks: 4, overlap: off}]\n"
      "seeds: [0, 41]\n");
  ASSERT_EQ(ex.jobs.size(), 3u * 3 * 2 * 2 * 2 + 2);
  EXPECT_EQ(std::get<std::string>(gj::get_param(ex.jobs[0].params, "data_dir")), "/data/\"quoted\" \\ dir\t");
  for (const auto& j : ex.jobs) EXPECT_EQ(j.id, gj::job_id(j.params)) << gj::canonical_json(j.params);
}

TEST(JobsGridExpand, CompareByAndDefaultName) {
  auto ex =
      gj::load_grid_string("grid: {device: [cpu]}\ncompare: {by: device}\n", "some/dir/speed-test.yaml");
  EXPECT_EQ(ex.name, "speed-test");
  EXPECT_EQ(ex.compare_by, "device");
}

TEST(JobsGridExpand, NameMissingAndFileNameUnusable) {
  try {
    gj::load_grid_string("grid: {ranks: [1]}\n", "dir/my grid.yaml");
    FAIL();
  } catch (const gj::GridError& e) {
    EXPECT_STREQ(e.what(),
                 "dir/my grid.yaml:1:1: name: missing, and the file name 'my grid' is no "
                 "valid run name; add name:");
  }
}

TEST(JobsGridExpand, AllowEmpty) {
  const char* y = "name: e\ngrid: {model: [mlp]}\nexclude: [{model: mlp}]\n";
  gj::LoadOptions o;
  o.allow_empty = true;
  EXPECT_EQ(load(y, o).jobs.size(), 0u);
  EXPECT_EQ(error_of(y), "grid.yaml:2:1: grid: the grid expands to no jobs (every job is excluded)");
}

TEST(JobsGridExpand, GpuRanksAndHalfPrecisionOnlyWhereValid) {
  auto ex = load(
      "name: g\n"
      "grid:\n"
      "  device: [cpu, gpu]\n"
      "  ranks: [1, 4, 8]\n"
      "  precision: [fp32, bf16]\n"
      "exclude:\n"
      "  - {device: gpu, ranks: 8}\n"
      "  - {device: cpu, precision: bf16}\n");
  EXPECT_EQ(ex.jobs.size(), 3u + 4u);  // cpu: 3 ranks x fp32; gpu: 2 ranks x 2 precisions
}

TEST(JobsGridExpand, FileLoadAndMissingFile) {
  try {
    gj::load_grid("/nonexistent/grid.yaml");
    FAIL();
  } catch (const gj::GridError& e) {
    EXPECT_STREQ(e.what(), "/nonexistent/grid.yaml: cannot open grid file");
    EXPECT_EQ(e.line(), 0);
  }
  EXPECT_THROW(gj::load_grid("/tmp"), gj::GridError);
}

TEST(JobsGridExpand, TooManyJobs) {
  gj::LoadOptions o;
  o.max_jobs = 100;
  try {
    load(
        "name: big\ngrid: {ranks: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11]}\nseeds: [0, 1, 2, 3, 4, 5, "
        "6, 7, 8, 9]\n",
        o);
    FAIL();
  } catch (const gj::GridError& e) {
    EXPECT_STREQ(e.what(),
                 "grid.yaml:2:1: grid: the grid has more than 100 jobs; split it or "
                 "check the lists");
  }
}

// ---- errors: message, line, column and key path ----------------------------------------------

struct ErrorCase {
  const char* title;
  const char* yaml;
  const char* what;
};

class JobsGridErrors : public ::testing::TestWithParam<ErrorCase> {};

TEST_P(JobsGridErrors, MessageAndLocation) {
  EXPECT_EQ(error_of(GetParam().yaml), GetParam().what) << GetParam().title;
}

// clang-format off
const ErrorCase kErrors[] = {
  {"issue example: gpu ranks",
   "name: x\n"
   "defaults:\n"
   "  device: gpu\n"
   "grid:\n"
   "  model: [mlp]\n"
   "  lr: [0.1]\n"
   "  ranks: [2,4,8]\n",
   "grid.yaml:7:15: grid.ranks[2]: 8 is out of range for device gpu (1-4)"},
  {"cpu ranks below 1", "name: x\ngrid: {ranks: [1, 0]}\n",
   "grid.yaml:2:19: grid.ranks[1]: 0 is out of range (must be >= 1)"},
  {"unknown top-level key", "name: x\ngird:\n  ranks: [1]\n",
   "grid.yaml:2:1: gird: unknown key 'gird'; did you mean 'grid'?"},
  {"parameter at top level", "name: x\nlr: 0.1\n",
   "grid.yaml:2:1: lr: unknown key 'lr'; parameters go under defaults: or grid:"},
  {"unknown top-level key, no hint", "name: x\nfoobar: 1\n",
   "grid.yaml:2:1: foobar: unknown key 'foobar'; expected one of name, defaults, grid, zip, "
   "sample, exclude, include, seeds, compare, command, env, files, params"},
  // Command jobs (issue 56): what the loader refuses before any file is looked at.
  {"command: unknown placeholder", "name: x\ncommand: [python3, t.py, --lr, \"{lrate}\"]\n",
   "grid.yaml:2:32: command[3]: '{lrate}' is no parameter; did you mean {lr}? (placeholders: the "
   "job's parameters, {id}, {run}; {{ and }} for braces)"},
  {"command: unclosed brace", "name: x\ncommand: [python3, t.py, \"{lr\"]\n",
   "grid.yaml:2:26: command[2]: '{lr': '{' without '}' (write {{ for a literal brace)"},
  {"command: not a list", "name: x\ncommand: python3 t.py\n",
   "grid.yaml:2:10: command: expected the program's arguments as a list, such as [python3, train.py, "
   "--lr, \"{lr}\"], got a scalar"},
  {"command: a model too", "name: x\ncommand: [python3, t.py]\ndefaults: {model: resnet18}\n",
   "grid.yaml:3:19: defaults.model: a command job runs your program, not a model: leave model out "
   "(command: at 2:1)"},
  {"env: a reserved name", "name: x\ncommand: [python3, t.py]\nenv: {MASTER_PORT: 1}\n",
   "grid.yaml:3:7: env.MASTER_PORT: MASTER_PORT is set by gridrun for every rank (docs/own-script.md)"},
  {"env: without command", "name: x\nenv: {A: 1}\n",
   "grid.yaml:2:1: env: env: applies to a command: grid only (your own program)"},
  {"unknown parameter in defaults", "name: x\ndefaults:\n  epoch: 3\n",
   "grid.yaml:3:3: defaults.epoch: unknown parameter 'epoch'; did you mean 'epochs'?"},
  {"unknown parameter in grid", "name: x\ngrid:\n  optimiser: [sgd]\n",
   "grid.yaml:3:3: grid.optimiser: unknown parameter 'optimiser'; did you mean 'optimizer'?"},
  {"unknown parameter in include", "name: x\ninclude:\n  - {model: mlp, rank: 2}\n",
   "grid.yaml:3:18: include[0].rank: unknown parameter 'rank'; did you mean 'ranks'?"},
  {"unknown parameter in exclude", "name: x\nexclude:\n  - {devise: cpu}\n",
   "grid.yaml:3:6: exclude[0].devise: unknown parameter 'devise'; did you mean 'device'?"},
  {"unknown parameter in zip", "name: x\nzip:\n  warmup: [1]\n",
   "grid.yaml:3:3: zip.warmup: unknown parameter 'warmup'; did you mean 'warmup_steps'?"},
  {"integer expected, float given", "name: x\ngrid: {ranks: [1, 2.5]}\n",
   "grid.yaml:2:19: grid.ranks[1]: expected an integer, got '2.5'"},
  {"integer expected, quoted string given", "name: x\ndefaults: {epochs: \"3\"}\n",
   "grid.yaml:2:20: defaults.epochs: expected an integer, got string \"3\""},
  {"number expected", "name: x\ndefaults: {lr: fast}\n",
   "grid.yaml:2:16: defaults.lr: expected a number, got 'fast'"},
  {"bool expected", "name: x\ndefaults: {overlap: maybe}\n",
   "grid.yaml:2:21: defaults.overlap: expected a bool, got 'maybe'"},
  {"scalar expected, list given", "name: x\ndefaults: {lr: [0.1]}\n",
   "grid.yaml:2:16: defaults.lr: expected a number, got a list"},
  {"value missing", "name: x\ndefaults:\n  lr:\n",
   "grid.yaml:3:3: defaults.lr: expected a number, got nothing"},
  {"grid axis not a list", "name: x\ngrid:\n  ranks: 2\n",
   "grid.yaml:3:10: grid.ranks: expected a list of values, got a scalar"},
  {"grid axis missing", "name: x\ngrid:\n  ranks:\n",
   "grid.yaml:3:3: grid.ranks: expected a list of values, got nothing"},
  {"grid axis empty", "name: x\ngrid:\n  ranks: []\n",
   "grid.yaml:3:10: grid.ranks: empty list: the grid would have no jobs"},
  {"defaults not a map", "name: x\ndefaults: [lr]\n",
   "grid.yaml:2:11: defaults: expected a map of parameter: value, got a list"},
  {"unknown model", "name: x\ngrid: {model: [mlp, resnet]}\n",
   "grid.yaml:2:21: grid.model[1]: unknown model 'resnet'; did you mean 'resnet18'?"},
  {"unknown dataset", "name: x\ndefaults: {dataset: imagenet}\n",
   "grid.yaml:2:21: defaults.dataset: unknown dataset 'imagenet'; choose one of synthetic, "
   "cifar10, mnist, fashion-mnist, text, hdf5"},
  {"unknown optimizer", "name: x\ninclude: [{optimizer: adamm}]\n",
   "grid.yaml:2:23: include[0].optimizer: unknown optimizer 'adamm'; did you mean 'adam'?"},
  {"unknown device in exclude", "name: x\nexclude: [{device: gpus}]\n",
   "grid.yaml:2:20: exclude[0].device: unknown device 'gpus'; did you mean 'gpu'?"},
  {"unknown task", "name: x\ndefaults: {task: infer}\n",
   "grid.yaml:2:18: defaults.task: unknown task 'infer'; did you mean 'inference'?"},
  {"unknown lr_schedule", "name: x\ndefaults: {lr_schedule: linear}\n",
   "grid.yaml:2:25: defaults.lr_schedule: unknown lr_schedule 'linear'; choose one of constant, "
   "step, cosine"},
  {"unknown precision", "name: x\ndefaults: {precision: fp8}\n",
   "grid.yaml:2:23: defaults.precision: unknown precision 'fp8'; choose one of fp32, bf16, fp16"},
  {"lr not positive", "name: x\ngrid:\n  lr: [0.1, 0]\n",
   "grid.yaml:3:13: grid.lr[1]: 0.0 is out of range (must be > 0)"},
  {"batch not positive", "name: x\ndefaults: {batch_per_rank: 0}\n",
   "grid.yaml:2:28: defaults.batch_per_rank: 0 is out of range (must be >= 1)"},
  {"global batch not positive", "name: x\ndefaults: {global_batch: -8}\n",
   "grid.yaml:2:26: defaults.global_batch: -8 is out of range (must be >= 1)"},
  {"threads not positive", "name: x\ndefaults: {threads_per_rank: 0}\n",
   "grid.yaml:2:30: defaults.threads_per_rank: 0 is out of range (must be >= 1)"},
  {"momentum above 1", "name: x\ndefaults: {momentum: 1.5}\n",
   "grid.yaml:2:22: defaults.momentum: 1.5 is out of range (0-1)"},
  {"bad time limit", "name: x\ndefaults: {time_limit: 1h}\n",
   "grid.yaml:2:24: defaults.time_limit: time limit '1h' is not MM, MM:SS, HH:MM:SS, D-HH, "
   "D-HH:MM or D-HH:MM:SS"},
  {"half precision on cpu", "name: x\ngrid:\n  precision: [fp32, fp16]\n",
   "grid.yaml:3:21: grid.precision[1]: fp16 needs device gpu (this job has device cpu from the "
   "default)"},
  {"both limits zero", "name: x\ndefaults: {max_steps: 0}\ngrid:\n  epochs: [1, 0]\n",
   "grid.yaml:4:15: grid.epochs[1]: epochs and max_steps are both 0, so the job would never stop; "
   "set one"},
  {"both batch keys in defaults", "name: x\ndefaults: {batch_per_rank: 8, global_batch: 16}\n",
   "grid.yaml:2:31: defaults.global_batch: give either batch_per_rank or global_batch, not both"},
  {"both batch keys in an include", "name: x\ninclude:\n  - {global_batch: 8, batch_per_rank: 4}\n",
   "grid.yaml:3:23: include[0].batch_per_rank: give either batch_per_rank or global_batch, not "
   "both"},
  {"both batch keys varied", "name: x\ngrid: {batch_per_rank: [8]}\nzip: {global_batch: [16]}\n",
   "grid.yaml:3:7: zip.global_batch: vary either batch_per_rank or global_batch, not both (other "
   "one at grid.batch_per_rank)"},
  {"global batch not divisible",
   "name: x\ndefaults:\n  global_batch: 100\ngrid:\n  ranks: [1, 2, 3]\n",
   "grid.yaml:3:17: defaults.global_batch: global_batch 100 is not divisible by ranks 3 (ranks "
   "from grid.ranks[2])"},
  {"zip lengths differ", "name: x\nzip:\n  lr: [0.1, 0.2]\n  warmup_steps: [0, 10, 20]\n",
   "grid.yaml:4:17: zip.warmup_steps: 3 values, but zip.lr has 2; zip lists must have equal "
   "length"},
  {"parameter on two axes", "name: x\ngrid: {lr: [0.1]}\nzip: {lr: [0.2]}\n",
   "grid.yaml:3:7: zip.lr: 'lr' is already varied at grid.lr; a parameter can be on one axis only"},
  {"seed in grid and seeds", "name: x\ngrid: {seed: [1]}\nseeds: [1, 2]\n",
   "grid.yaml:3:1: seeds: 'seed' is also varied at grid.seed; use one of them"},
  {"seeds not a list", "name: x\nseeds: 3\n",
   "grid.yaml:2:8: seeds: expected a list of values, got a scalar"},
  {"negative seed", "name: x\nseeds: [0, -1]\n",
   "grid.yaml:2:12: seeds[1]: -1 is out of range (must be >= 0)"},
  {"bad name", "name: my run\n",
   "grid.yaml:1:7: name: 'my run' may only contain letters, digits, '_', '.' and '-'"},
  {"compare by unknown parameter", "name: x\ncompare: {by: devise}\n",
   "grid.yaml:2:15: compare.by: unknown parameter 'devise'; did you mean 'device'?"},
  {"compare with unknown key", "name: x\ncompare: {bye: device}\n",
   "grid.yaml:2:11: compare.bye: unknown key 'bye'; did you mean 'by'?"},
  {"empty exclude list value", "name: x\nexclude:\n  - {ranks: []}\n",
   "grid.yaml:3:13: exclude[0].ranks: empty list matches nothing"},
  {"compare not a map", "name: x\ncompare: device\n",
   "grid.yaml:2:10: compare: expected a map such as {by: device}, got a scalar"},
  {"include not a list", "name: x\ninclude: {model: mlp}\n",
   "grid.yaml:2:10: include: expected a list of maps, got a map"},
  {"zip not a map", "name: x\nzip: [lr]\n",
   "grid.yaml:2:6: zip: expected a map of parameter: [values], got a list"},
  {"empty exclude entry", "name: x\nexclude:\n  - {}\n",
   "grid.yaml:3:5: exclude[0]: an empty entry would exclude every job"},
  {"exclude not a list", "name: x\nexclude: {model: mlp}\n",
   "grid.yaml:2:10: exclude: expected a list of maps, got a map"},
  {"include entry not a map", "name: x\ninclude:\n  - mlp\n",
   "grid.yaml:3:5: include[0]: expected a map of parameter: value, got a scalar"},
  {"duplicate key", "name: x\ndefaults:\n  lr: 0.1\n  lr: 0.2\n",
   "grid.yaml:4:3: defaults.lr: duplicate key"},
  {"YAML syntax error", "name: x\ngrid: {ranks: [1, 2}\n",
   "grid.yaml:2:20: YAML syntax error: illegal flow end"},
  {"empty document", "",
   "grid.yaml:1:1: expected a map with name, defaults, grid, ... at the top, got nothing"},
  {"document is a list", "- a\n- b\n",
   "grid.yaml:1:1: expected a map with name, defaults, grid, ... at the top, got a list"},
};
// clang-format on

INSTANTIATE_TEST_SUITE_P(All, JobsGridErrors, ::testing::ValuesIn(kErrors),
                         [](const ::testing::TestParamInfo<ErrorCase>& info) {
                           std::string n = info.param.title;
                           for (char& c : n)
                             if (!std::isalnum(static_cast<unsigned char>(c))) c = '_';
                           return n;
                         });

TEST(JobsGridErrorType, FieldsAndExitCodeCategory) {
  try {
    load("name: x\ndefaults:\n  lr: 0\n");
    FAIL();
  } catch (const std::invalid_argument& e) {  // main.cpp maps this to exit code 2
    auto* ge = dynamic_cast<const gj::GridError*>(&e);
    ASSERT_NE(ge, nullptr);
    EXPECT_EQ(ge->file(), "grid.yaml");
    EXPECT_EQ(ge->line(), 3);
    EXPECT_EQ(ge->col(), 7);
    EXPECT_EQ(ge->key_path(), "defaults.lr");
    EXPECT_EQ(ge->message(), "0.0 is out of range (must be > 0)");
  }
}

TEST(JobsGridErrorType, EveryErrorInFileOrder) {
  // Two bad values: both are reported, in file order, as a compiler does (issue 49); the first
  // one's location is the error's.
  EXPECT_EQ(error_of("name: x\ndefaults: {lr: 0}\ngrid: {ranks: [0]}\n"),
            "grid.yaml:2:16: defaults.lr: 0.0 is out of range (must be > 0)\n"
            "grid.yaml:3:16: grid.ranks[0]: 0 is out of range (must be >= 1)\n2 errors in grid.yaml");
  EXPECT_EQ(error_of("name: x\ngrid: {ranks: [0]}\ndefaults: {lr: 0}\n"),
            "grid.yaml:2:16: grid.ranks[0]: 0 is out of range (must be >= 1)\n"
            "grid.yaml:3:16: defaults.lr: 0.0 is out of range (must be > 0)\n2 errors in grid.yaml");
  // Every key of every section, including other tools' names, up to 20.
  EXPECT_EQ(
      error_of("name: x\ndefaults: {batch_size: 8, learning_rate: 0.1, lr: 0.1}\ngrid: {rank: [1]}\n"
               "epocs: 2\n"),
      "grid.yaml:2:12: defaults.batch_size: unknown parameter 'batch_size': "
      "gridrun sets 'batch_per_rank' (samples per rank and step) or 'global_batch' (all ranks together)\n"
      "grid.yaml:2:27: defaults.learning_rate: unknown parameter 'learning_rate': gridrun calls it 'lr'\n"
      "grid.yaml:3:8: grid.rank: unknown parameter 'rank'; did you mean 'ranks'?\n"
      "grid.yaml:4:1: epocs: unknown key 'epocs'; expected one of name, defaults, grid, zip, sample, "
      "exclude, include, seeds, compare, command, env, files, params\n"
      "4 errors in grid.yaml");
  std::string many = "name: x\ndefaults:\n";
  for (int i = 0; i < 30; ++i) many += "  bad" + std::to_string(i) + ": 1\n";
  const std::string e = error_of(many);
  EXPECT_EQ(std::count(e.begin(), e.end(), '\n'), 20) << e;
  EXPECT_NE(e.find("20 errors in grid.yaml (stopped there; fix these first)"), std::string::npos) << e;
}

// on_job (what `gridrun plan` uses) hands out exactly the jobs a stored expansion holds: same
// order, indices, ids and values, duplicates dropped the same way.
TEST(Grid, StreamedJobsEqualStoredJobs) {
  const std::string yaml =
      "grid:\n  model: [mlp, lenet]\n  ranks: [1, 2]\n  lr: [0.1, 0.1]\nseeds: [1, 2]\n"
      "include:\n  - {model: mlp, ranks: 1, lr: 0.1}\n";
  const auto stored = gj::load_grid_string(yaml, "grid.yaml");
  std::vector<std::tuple<std::size_t, std::string, std::vector<gj::Value>>> got;
  gj::LoadOptions lo;
  lo.on_job = [&](std::size_t i, const std::string& id, const std::vector<gj::Value>& v) {
    got.emplace_back(i, id, v);
  };
  const auto streamed = gj::load_grid_string(yaml, "grid.yaml", lo);
  EXPECT_TRUE(streamed.jobs.empty());
  ASSERT_EQ(streamed.streamed, stored.jobs.size());
  ASSERT_EQ(got.size(), stored.jobs.size());
  EXPECT_EQ(streamed.duplicates, stored.duplicates);
  EXPECT_GT(stored.duplicates, 0u);
  EXPECT_EQ(streamed.varying, stored.varying);
  EXPECT_EQ(streamed.warnings, stored.warnings);
  const auto& table = gj::param_table();
  for (std::size_t k = 0; k < got.size(); ++k) {
    const auto& [i, id, v] = got[k];
    EXPECT_EQ(i, stored.jobs[k].index);
    EXPECT_EQ(id, stored.jobs[k].id);
    ASSERT_EQ(v.size(), table.size());
    for (std::size_t c = 0; c < table.size(); ++c)
      EXPECT_EQ(v[c], gj::get_param(stored.jobs[k].params, table[c].name)) << table[c].name;
  }
}

// ---- files a job names (model: torchscript, dataset: hdf5; issue 33) -------------------------

namespace {
struct FilesDir {
  std::filesystem::path dir;
  FilesDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "gridrun-jobs-files-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    dir = tmpl;
  }
  ~FilesDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::string write(const std::string& name, const std::string& text) const {
    std::filesystem::create_directories((dir / name).parent_path());
    std::ofstream(dir / name) << text;
    return (dir / name).string();
  }
};
}  // namespace

TEST(JobsGridFiles, ModelFileIsResolvedAtTheGridAndHashedIntoTheId) {
  FilesDir d;
  d.write("models/a.pt", "abc");
  d.write("models/b.pt", "abd");
  const std::string grid = d.write("exp/g.yaml",
                                   "name: x\ndefaults: {model: torchscript}\n"
                                   "grid:\n  model_file: [../models/a.pt, ../models/b.pt]\n");
  const auto ex = gj::load_grid(grid);
  ASSERT_EQ(ex.jobs.size(), 2u);
  EXPECT_EQ(str(ex.jobs[0], "model_file"), (d.dir / "models/a.pt").string());
  // SHA-256("abc"), the FIPS 180-2 example.
  EXPECT_EQ(str(ex.jobs[0], "model_sha256"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(ex.jobs[0].id, gj::job_id(ex.jobs[0].params));
  EXPECT_NE(ex.jobs[0].id, ex.jobs[1].id);
  // The hash follows the path: a column of its own only where one path held two contents.
  EXPECT_NE(std::find(ex.varying.begin(), ex.varying.end(), "model_file"), ex.varying.end());
  EXPECT_EQ(std::find(ex.varying.begin(), ex.varying.end(), "model_sha256"), ex.varying.end());
  // Another content at the same path is another job; the same content keeps its id.
  const std::string id_a = ex.jobs[0].id;
  d.write("models/a.pt", "abd");
  const auto changed = gj::load_grid(grid);
  EXPECT_NE(changed.jobs[0].id, id_a);
  d.write("models/a.pt", "abc");
  EXPECT_EQ(gj::load_grid(grid).jobs[0].id, id_a);
  // A copy of the grid elsewhere (a run's grid.yaml) finds the files from its recorded folder.
  const std::string copy = d.write("run/grid.yaml",
                                   "name: x\ndefaults: {model: torchscript}\n"
                                   "grid:\n  model_file: [../models/a.pt, ../models/b.pt]\n");
  gj::LoadOptions lo;
  lo.base_dir = (d.dir / "exp").string();
  EXPECT_EQ(gj::load_grid(copy, lo).jobs[0].id, id_a);
  // Jobs without a model file keep the ids they had before model_file existed.
  EXPECT_EQ(load("name: x\n").jobs[0].id, gj::job_id(gj::JobParams{}));
}

// Issue 45, finding 7: a data file's content, not its path, is in the job id (data_sha256, like
// model_sha256), and neither file's path is: new data under one name is a new job, and the same
// files in another folder (another checkout) keep their ids.
TEST(JobsGridFiles, DataAndModelContentNotPathsAreInTheId) {
  FilesDir d;
  d.write("a/d.h5", "abc");
  d.write("a/m.pt", "model");
  const std::string grid = d.write("a/g.yaml",
                                   "name: x\ndefaults: {dataset: hdf5, data_file: d.h5, model: torchscript, "
                                   "model_file: m.pt}\n");
  const auto ex = gj::load_grid(grid);
  ASSERT_EQ(ex.jobs.size(), 1u);
  EXPECT_EQ(str(ex.jobs[0], "data_file"), (d.dir / "a/d.h5").string());
  EXPECT_EQ(str(ex.jobs[0], "data_sha256"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(ex.jobs[0].id, gj::job_id(ex.jobs[0].params));
  EXPECT_EQ(gj::id_json(ex.jobs[0].params).find("d.h5"), std::string::npos);
  EXPECT_EQ(gj::id_json(ex.jobs[0].params).find("m.pt"), std::string::npos);
  const std::string id = ex.jobs[0].id;
  // The folder moved elsewhere (another checkout): same files, same id.
  std::filesystem::rename(d.dir / "a", d.dir / "b");
  EXPECT_EQ(gj::load_grid((d.dir / "b/g.yaml").string()).jobs[0].id, id);
  // Other data under the same name: another job; the old bytes back: the old id.
  d.write("b/d.h5", "abd");
  EXPECT_NE(gj::load_grid((d.dir / "b/g.yaml").string()).jobs[0].id, id);
  d.write("b/d.h5", "abc");
  EXPECT_EQ(gj::load_grid((d.dir / "b/g.yaml").string()).jobs[0].id, id);
  // One content at two paths is one job (the second a duplicate); two contents are two jobs, and
  // the hash gets no column of its own beside the path that varies.
  d.write("b/copy.h5", "abc");
  d.write("b/other.h5", "xyz");
  const auto two = gj::load_grid(d.write("b/g2.yaml",
                                         "name: x\ndefaults: {dataset: hdf5}\n"
                                         "grid:\n  data_file: [d.h5, copy.h5, other.h5]\n"));
  ASSERT_EQ(two.jobs.size(), 2u);
  EXPECT_EQ(two.duplicates, 1u);
  EXPECT_NE(std::find(two.varying.begin(), two.varying.end(), "data_file"), two.varying.end());
  EXPECT_EQ(std::find(two.varying.begin(), two.varying.end(), "data_sha256"), two.varying.end());
  // Jobs without a data file keep the ids they had before data_sha256 existed.
  EXPECT_EQ(load("name: x\n").jobs[0].id, gj::job_id(gj::JobParams{}));
}

TEST(JobsGridFiles, MissingFilesHashesAndDataChecksAreLocated) {
  FilesDir d;
  d.write("m.pt", "x");
  d.write("d.h5", "y");
  auto error_in = [&](const std::string& text, const gj::LoadOptions& lo = {}) -> std::string {
    const std::string grid = d.write("g.yaml", text);
    try {
      gj::load_grid(grid, lo);
    } catch (const gj::GridError& e) {
      return std::string(e.what()).substr(grid.size());
    }
    return "no error";
  };
  EXPECT_EQ(error_in("name: x\ndefaults: {model: torchscript, model_file: nope.pt}\n"),
            ":2:44: defaults.model_file: 'nope.pt' is not a readable file (looked for " +
                (d.dir / "nope.pt").string() + ")");
  EXPECT_EQ(error_in("name: x\ndefaults: {model: torchscript}\n"),
            ":2:19: defaults.model: model=torchscript needs model_file (a TorchScript archive saved with "
            "torch.jit.save)");
  EXPECT_EQ(error_in("name: x\ndefaults: {model_file: m.pt}\n"),
            ":2:24: defaults.model_file: model_file is read by model=torchscript only (this job has model "
            "mlp from the "
            "default)");
  // A pinned hash must be the file's (a grid gridrun wrote from planned jobs carries it).
  const std::string sha_x = "2d711642b726b04401627ca9fbac32f5c8530fb1903cc4db02258717921a4881";
  EXPECT_EQ(error_in("name: x\ndefaults: {model: torchscript, model_file: m.pt, model_sha256: abc}\n"),
            ":2:64: defaults.model_sha256: model_sha256 abc is not the SHA-256 of " +
                (d.dir / "m.pt").string() + " (" + sha_x +
                "): the file changed since; leave model_sha256 out (the planner fills it in)");
  EXPECT_EQ(error_in("name: x\ndefaults: {model: torchscript, model_file: m.pt, model_sha256: " + sha_x +
                     "}\ngrid:\n  seed: [1, 2]\n"),
            "no error");
  EXPECT_EQ(error_in("name: x\ndefaults: {model_sha256: \"\"}\n"), "no error");
  const std::string sha_y = "a1fce4363854ff888cff4b8e7875d600c2682390412a8cf79b37d0b11148b0fa";
  EXPECT_EQ(error_in("name: x\ndefaults: {dataset: hdf5, data_file: d.h5, data_sha256: abc}\n"),
            ":2:57: defaults.data_sha256: data_sha256 abc is not the SHA-256 of " +
                (d.dir / "d.h5").string() + " (" + sha_y +
                "): the file changed since; leave data_sha256 out (the planner fills it in)");
  EXPECT_EQ(error_in("name: x\ndefaults: {dataset: hdf5, data_file: d.h5, data_sha256: " + sha_y + "}\n"),
            "no error");
  EXPECT_EQ(error_in("name: x\ndefaults: {data_sha256: " + sha_y + "}\n"),
            ":2:25: defaults.data_sha256: data_sha256 belongs to data_file (the planner fills it in)");
  EXPECT_EQ(
      error_in("name: x\ndefaults: {dataset: hdf5}\n"),
      ":2:21: defaults.dataset: dataset=hdf5 needs data_file (the HDF5 file with /train/x and /train/y)");
  EXPECT_EQ(
      error_in("name: x\ndefaults: {input: tokens}\n"),
      ":2:19: defaults.input: input=tokens needs a model that takes token ids (transformer or torchscript)");
  // The data file's check is the command's (gridrun reads HDF5 in results/), reported at data_file.
  gj::LoadOptions lo;
  int calls = 0;
  lo.check_data_file = [&](const gj::JobParams& j) {
    ++calls;
    return j.data_file + ": /train/y is float32 (expected integer class labels)";
  };
  EXPECT_EQ(error_in("name: x\ndefaults: {dataset: hdf5}\ngrid:\n  data_file: [d.h5]\n", lo),
            ":4:15: grid.data_file[0]: " + (d.dir / "d.h5").string() +
                ": /train/y is float32 (expected integer class labels)");
  lo.check_data_file = [&](const gj::JobParams&) {
    ++calls;
    return std::string();
  };
  calls = 0;
  const std::string grid =
      d.write("g.yaml", "name: x\ndefaults: {dataset: hdf5, data_file: d.h5}\ngrid:\n  seed: [1, 2, 3]\n");
  EXPECT_EQ(gj::load_grid(grid, lo).jobs.size(), 3u);
  EXPECT_EQ(calls, 1);  // once per file and model
}

// The model check is the command's (gridrun-train in a child, scheduler::ModelChecker): reported
// at model_file, once per model content and input, never for an excluded job (issues 45 and 49).
TEST(JobsGridFiles, ModelCheckIsLocatedAndRunOncePerContentAndInput) {
  FilesDir d;
  d.write("m.pt", "x");
  d.write("n.pt", "y");
  gj::LoadOptions lo;
  std::vector<std::string> seen;
  lo.check_model_file = [&](const gj::JobParams& j) {
    seen.push_back(j.model_file + " " + j.input);
    EXPECT_EQ(j.model_sha256.size(), 64u);  // the planner's hash is there for the checker's cache
    return j.model_file == (d.dir / "n.pt").string() ? j.model_file + ": forward returned [2]" : "";
  };
  const std::string good = d.write("g.yaml",
                                   "name: x\ndefaults: {model: torchscript, model_file: m.pt}\ngrid:\n  "
                                   "seed: [1, 2, 3]\n  input: [auto, image]\n");
  EXPECT_EQ(gj::load_grid(good, lo).jobs.size(), 6u);
  EXPECT_EQ(seen, (std::vector<std::string>{(d.dir / "m.pt").string() + " auto",
                                            (d.dir / "m.pt").string() + " image"}));
  seen.clear();
  const std::string bad =
      d.write("b.yaml",
              "name: x\ndefaults: {model: torchscript}\ngrid:\n  model_file: [m.pt, n.pt]\n"
              "exclude:\n  - {model_file: " +
                  (d.dir / "n.pt").string() + "}\n");
  EXPECT_EQ(gj::load_grid(bad, lo).jobs.size(), 1u);  // n.pt's only job is excluded: not checked
  EXPECT_EQ(seen.size(), 1u);
  const std::string bad2 =
      d.write("c.yaml", "name: x\ndefaults: {model: torchscript}\ngrid:\n  model_file: [m.pt, n.pt]\n");
  try {
    gj::load_grid(bad2, lo);
    ADD_FAILURE() << "n.pt's failed check did not refuse the grid";
  } catch (const gj::GridError& e) {
    EXPECT_EQ(std::string(e.what()).substr(bad2.size()),
              ":4:22: grid.model_file[1]: " + (d.dir / "n.pt").string() + ": forward returned [2]");
  }
}

// ---- compare.repeats ---------------------------------------------------------------------------

// Repeats: the first measurement keeps its id; the others are copies with `repeat` set, in blocks
// whose phases alternate (A B | B A | A B), as `gridrun run` and `submit` take them in order.
TEST(JobsGridRepeats, CopiesInterleavedAlternate) {
  const std::string base = "name: r\ngrid: {ranks: [2, 1], seed: [0, 1]}\ncompare: {by: ranks";
  const auto one = load(base + "}\n");
  const auto three = load(base + ", repeats: 3}\n");
  ASSERT_EQ(one.jobs.size(), 4u);
  ASSERT_EQ(three.jobs.size(), 12u);
  EXPECT_EQ(three.compare_repeats, 3);
  for (std::size_t k = 0; k < 4; ++k) EXPECT_EQ(three.jobs[k].id, one.jobs[k].id);
  std::vector<std::string> order;
  std::set<std::string> ids;
  for (const auto& j : three.jobs) {
    const std::string key = std::to_string(i64(j, "ranks")) + "#" + std::to_string(i64(j, "repeat"));
    if (order.empty() || order.back() != key) order.push_back(key);
    ids.insert(j.id);
    EXPECT_EQ(j.index, static_cast<std::size_t>(&j - three.jobs.data()));
  }
  EXPECT_EQ(ids.size(), 12u);
  EXPECT_EQ(order, (std::vector<std::string>{"2#0", "1#0", "1#1", "2#1", "2#2", "1#2"}));
  EXPECT_NE(std::find(three.varying.begin(), three.varying.end(), "repeat"), three.varying.end());
  // --repeats replaces the grid's; blocked keeps every repeat of a phase together.
  gj::LoadOptions lo;
  lo.repeats = 2;
  EXPECT_EQ(load(base + ", repeats: 3}\n", lo).jobs.size(), 8u);
  const auto blocked = load(base + ", repeats: 2, order: blocked}\n");
  order.clear();
  for (const auto& j : blocked.jobs) {
    const std::string key = std::to_string(i64(j, "ranks")) + "#" + std::to_string(i64(j, "repeat"));
    if (order.empty() || order.back() != key) order.push_back(key);
  }
  EXPECT_EQ(order, (std::vector<std::string>{"2#0", "2#1", "1#0", "1#1"}));
  // random: the same order for the same grid name, every time.
  const auto r1 = load(base + ", repeats: 5, order: random}\n");
  const auto r2 = load(base + ", repeats: 5, order: random}\n");
  ASSERT_EQ(r1.jobs.size(), r2.jobs.size());
  for (std::size_t k = 0; k < r1.jobs.size(); ++k) EXPECT_EQ(r1.jobs[k].id, r2.jobs[k].id);
  // Without compare-by there is nothing to repeat.
  EXPECT_EQ(load("name: r\ngrid: {ranks: [2, 1]}\n", lo).jobs.size(), 2u);
}

TEST(JobsGridRepeats, BadValuesNameTheKey) {
  const std::string base = "name: r\ngrid: {ranks: [2, 1]}\ncompare: {by: ranks, ";
  EXPECT_NE(
      error_of(base + "repeats: 0}\n").find("compare.repeats: expected an integer from 1 to 20, got '0'"),
      std::string::npos)
      << error_of(base + "repeats: 0}\n");
  EXPECT_NE(error_of(base + "repeats: 21}\n").find("compare.repeats"), std::string::npos);
  EXPECT_NE(error_of(base + "repeats: '3'}\n").find("compare.repeats"), std::string::npos);
  EXPECT_NE(error_of(base + "order: sideways}\n").find("compare.order: expected alternate"),
            std::string::npos);
  EXPECT_NE(error_of(base + "repaets: 3}\n").find("did you mean 'repeats'?"), std::string::npos);
  EXPECT_NE(error_of("name: r\ngrid: {ranks: [2, 1]}\ncompare: {repeats: 3}\n").find("expected 'by: KEY'"),
            std::string::npos);
}

// Names other tools use are answered with gridrun's (issue 49): an edit distance finds no 'lr' in
// 'learning_rate'; a typo of such a name too; and the --set message has no dangling "or".
TEST(JobsGridErrors, UsualNamesOfOtherToolsGetGridrunsName) {
  EXPECT_NE(error_of("grid: {learning_rate: [0.1]}\n")
                .find("unknown parameter 'learning_rate': gridrun calls it 'lr'"),
            std::string::npos)
      << error_of("grid: {learning_rate: [0.1]}\n");
  EXPECT_NE(error_of("defaults: {batch_size: 32}\n").find("'batch_per_rank'"), std::string::npos);
  EXPECT_NE(error_of("defaults: {num_epochs: 3}\n").find("'epochs'"), std::string::npos);
  EXPECT_NE(error_of("defaults: {weight-decay: 0.1}\n").find("'weight_decay'"), std::string::npos);
  EXPECT_NE(error_of("defaults: {gpus: 4}\n").find("'ranks'"), std::string::npos);
  EXPECT_NE(error_of("defaults: {num_nodes: 2}\n").find("'nodes'"), std::string::npos);
  EXPECT_NE(error_of("defaults: {lerning_rate: 0.1}\n").find("'lr'"), std::string::npos);
  EXPECT_NE(error_of("defaults: {rank: 2}\n").find("did you mean 'ranks'?"), std::string::npos);
  // A --set key no parameter has is refused by the grid (it may declare it under params:).
  gj::LoadOptions o;
  try {
    o.overrides = gj::parse_overrides({"lerning_rate=0.1"}, "--set");
    load("defaults: {lr: 0.1}\n", o);
    ADD_FAILURE() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("gridrun calls it 'lr'"), std::string::npos) << e.what();
  }
  try {
    o.overrides = gj::parse_overrides({"zzqqxx=1"}, "--set");
    load("defaults: {lr: 0.1}\n", o);
    ADD_FAILURE() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_EQ(std::string(e.what()).find("expected or"), std::string::npos) << e.what();
  }
}

// ---- sample: (issue 58: sampled axes, as Ray Tune and Optuna offer) -------------------------

namespace {

const char* kSampled =
    "name: s\n"
    "grid: {model: [mlp, lenet]}\n"
    "sample:\n"
    "  n: 4\n"
    "  seed: 1\n"
    "  lr: {loguniform: [1.0e-4, 1.0e-1]}\n"
    "  momentum: {uniform: [0.8, 0.99]}\n"
    "  warmup_steps: {randint: [0, 100]}\n"
    "  batch_per_rank: {choice: [32, 64, 128]}\n"
    "seeds: [0, 1]\n";

std::string with_seed(std::string yaml, const std::string& seed) {
  yaml.replace(yaml.find("seed: 1"), 7, "seed: " + seed);
  return yaml;
}

std::vector<std::string> ids(const gj::Expansion& ex) {
  std::vector<std::string> out;
  for (const auto& j : ex.jobs) out.push_back(j.id);
  return out;
}

}  // namespace

// The sample is one axis (its params vary together) after grid and zip, before seeds; the values
// come from the seed alone, so two loads give the same jobs and ids.
TEST(JobsGridSample, SameSeedSameJobsAndIds) {
  const auto a = load(kSampled), b = load(kSampled);
  ASSERT_EQ(a.jobs.size(), 2u * 4u * 2u);
  EXPECT_EQ(ids(a), ids(b));
  for (std::size_t i = 0; i < a.jobs.size(); ++i) EXPECT_EQ(a.jobs[i].params, b.jobs[i].params);
  // Order: model outermost, then the 4 points, seeds innermost.
  EXPECT_EQ(str(a.jobs[0], "model"), "mlp");
  EXPECT_EQ(str(a.jobs[8], "model"), "lenet");
  EXPECT_EQ(i64(a.jobs[0], "seed"), 0);
  EXPECT_EQ(i64(a.jobs[1], "seed"), 1);
  EXPECT_EQ(dbl(a.jobs[0], "lr"), dbl(a.jobs[1], "lr"));
  EXPECT_EQ(dbl(a.jobs[2], "lr"), dbl(a.jobs[10], "lr"));  // the same point crossed with lenet
  std::set<double> lrs;
  for (const auto& j : a.jobs) {
    const double lr = dbl(j, "lr"), m = dbl(j, "momentum");
    EXPECT_TRUE(lr >= 1e-4 && lr <= 0.1) << lr;
    EXPECT_TRUE(m >= 0.8 && m <= 0.99) << m;
    EXPECT_TRUE(i64(j, "warmup_steps") >= 0 && i64(j, "warmup_steps") <= 100);
    const std::int64_t b = i64(j, "batch_per_rank");
    EXPECT_TRUE(b == 32 || b == 64 || b == 128) << b;
    // Four significant digits: the value prints as itself with %.3e.
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3e", lr);
    EXPECT_EQ(std::stod(buf), lr) << lr;
    lrs.insert(lr);
  }
  EXPECT_EQ(lrs.size(), 4u);
  for (const char* k : {"lr", "momentum", "warmup_steps", "batch_per_rank"})
    EXPECT_NE(std::find(a.varying.begin(), a.varying.end(), k), a.varying.end()) << k;
}

// The generator and its mappings are ours (splitmix64, no <random> distribution), so the values are
// the same on every platform: pinned here. A change of these numbers changes every sampled grid's
// job ids (CHANGELOG.md).
TEST(JobsGridSample, ValuesArePinned) {
  const auto ex = load(kSampled);
  std::vector<std::tuple<double, double, std::int64_t, std::int64_t>> got;
  for (std::size_t i = 0; i < 8; i += 2)
    got.emplace_back(dbl(ex.jobs[i], "lr"), dbl(ex.jobs[i], "momentum"), i64(ex.jobs[i], "warmup_steps"),
                     i64(ex.jobs[i], "batch_per_rank"));
  const decltype(got) want = {{0.000308, 0.8609, 35, 64},
                              {0.001786, 0.8883, 42, 128},
                              {0.001494, 0.9676, 14, 128},
                              {0.01466, 0.8872, 36, 128}};
  EXPECT_EQ(got, want);
}

TEST(JobsGridSample, AnotherSeedOtherValuesAndIds) {
  const auto a = load(kSampled), b = load(with_seed(kSampled, "2"));
  ASSERT_EQ(a.jobs.size(), b.jobs.size());
  const std::vector<std::string> va = ids(a);
  const std::set<std::string> ia(va.begin(), va.end());
  for (const auto& j : b.jobs) EXPECT_EQ(ia.count(j.id), 0u) << j.id;
  // seed 0 is the default.
  EXPECT_EQ(ids(load(with_seed(kSampled, "0"))),
            ids(load(std::string(kSampled).replace(std::string(kSampled).find("  seed: 1\n"), 10, ""))));
}

// Each parameter draws from its own stream: more points keep the first ones, another sampled
// parameter leaves the others' values.
TEST(JobsGridSample, MorePointsOrParamsKeepEarlierValues) {
  const std::string base = "name: s\nsample:\n  n: 3\n  seed: 7\n  lr: {uniform: [0.01, 0.5]}\n";
  const auto three = load(base);
  std::string five = base;
  five.replace(five.find("n: 3"), 4, "n: 5");
  const auto more = load(five);
  const auto wider = load(base + "  weight_decay: {loguniform: [1.0e-6, 1.0e-2]}\n");
  ASSERT_EQ(three.jobs.size(), 3u);
  ASSERT_EQ(more.jobs.size(), 5u);
  ASSERT_EQ(wider.jobs.size(), 3u);
  for (std::size_t i = 0; i < 3; ++i) {
    EXPECT_EQ(more.jobs[i].id, three.jobs[i].id);
    EXPECT_EQ(dbl(wider.jobs[i], "lr"), dbl(three.jobs[i], "lr"));
  }
}

TEST(JobsGridSample, IntegerDistributionsStayInTheirBounds) {
  const auto ex = load(
      "name: s\n"
      "sample:\n"
      "  n: 200\n"
      "  warmup_steps: {randint: [3, 5]}\n"
      "  train_samples: {lograndint: [10, 10000]}\n"
      "  optimizer: {choice: [sgd, adam]}\n");
  std::set<std::int64_t> warm;
  std::set<std::string> opt;
  std::int64_t lo = 1 << 30, hi = 0;
  for (const auto& j : ex.jobs) {
    warm.insert(i64(j, "warmup_steps"));
    opt.insert(str(j, "optimizer"));
    lo = std::min(lo, i64(j, "train_samples"));
    hi = std::max(hi, i64(j, "train_samples"));
  }
  EXPECT_EQ(warm, (std::set<std::int64_t>{3, 4, 5}));  // both ends included
  EXPECT_EQ(opt, (std::set<std::string>{"sgd", "adam"}));
  EXPECT_TRUE(lo >= 10 && lo < 30) << lo;  // log scale: the small values are as likely as the large
  EXPECT_TRUE(hi > 3000 && hi <= 10000) << hi;
}

// Excludes see sampled values; a repeated point is a duplicate, dropped with the usual warning.
TEST(JobsGridSample, ExcludesAndDuplicatesApplyToSampledPoints) {
  const auto ex = load(
      "name: s\n"
      "sample:\n"
      "  n: 12\n"
      "  batch_per_rank: {choice: [32, 64]}\n"
      "exclude:\n"
      "  - {batch_per_rank: 64}\n");
  ASSERT_EQ(ex.jobs.size(), 1u);
  EXPECT_EQ(i64(ex.jobs[0], "batch_per_rank"), 32);
  EXPECT_GT(ex.excluded, 0u);
  EXPECT_EQ(ex.excluded + ex.duplicates + 1, 12u);
  ASSERT_EQ(ex.warnings.size(), 1u);
  EXPECT_NE(ex.warnings[0].find("grid.yaml:2:1: sample: "), std::string::npos) << ex.warnings[0];
  EXPECT_NE(ex.warnings[0].find("duplicate jobs dropped"), std::string::npos) << ex.warnings[0];
}

// A combination problem of a sampled value names the point.
TEST(JobsGridSample, CombinationErrorNamesThePoint) {
  EXPECT_EQ(
      error_of("name: s\ndefaults: {ranks: 3}\nsample:\n  n: 2\n  global_batch: {choice: [64, 128]}\n"),
      "grid.yaml:5:17: sample[0].global_batch: global_batch 128 is not divisible by ranks 3 (ranks from "
      "defaults.ranks)");
}

// `--set KEY=A,B` over a sampled key takes it out of the sample (the others keep varying together).
TEST(JobsGridSample, SetListReplacesASampledColumn) {
  gj::LoadOptions o;
  o.overrides = gj::parse_overrides({"lr=0.01,0.02"});
  const auto ex = load(
      "name: s\nsample:\n  n: 3\n  lr: {loguniform: [1.0e-4, 1.0e-1]}\n  momentum: {uniform: [0.5, 0.9]}\n",
      o);
  ASSERT_EQ(ex.jobs.size(), 6u);
  std::set<double> lrs, ms;
  for (const auto& j : ex.jobs) {
    lrs.insert(dbl(j, "lr"));
    ms.insert(dbl(j, "momentum"));
  }
  EXPECT_EQ(lrs, (std::set<double>{0.01, 0.02}));
  EXPECT_EQ(ms.size(), 3u);
}

TEST(JobsGridSample, Errors) {
  const std::string head = "name: s\nsample:\n";
  const std::pair<std::string, std::string> cases[] = {
      {"  n: 4\n  lr: {loguniform: [0.1, 0.001]}\n",
       "grid.yaml:4:20: sample.lr.loguniform: low 0.1 must be below high 0.001"},
      {"  n: 4\n  lr: {uniform: [0.1, 0.1]}\n",
       "grid.yaml:4:17: sample.lr.uniform: low 0.1 must be below high 0.1"},
      {"  n: 4\n  weight_decay: {loguniform: [0, 0.1]}\n",
       "grid.yaml:4:31: sample.weight_decay.loguniform[0]: loguniform needs low > 0 (a log scale has no 0), "
       "got 0.0"},
      {"  n: 4\n  lr: {uniform: [0, 0.1]}\n",
       "grid.yaml:4:18: sample.lr.uniform[0]: 0.0 is out of range (must be > 0)"},
      {"  n: 0\n  lr: {uniform: [0.01, 0.1]}\n",
       "grid.yaml:3:6: sample.n: expected an integer from 1 to 100000, got '0'"},
      {"  n: -3\n  lr: {uniform: [0.01, 0.1]}\n",
       "grid.yaml:3:6: sample.n: expected an integer from 1 to 100000, got '-3'"},
      {"  lr: {uniform: [0.01, 0.1]}\n", "grid.yaml:2:1: sample: needs n: (how many points to draw)"},
      {"  n: 4\n",
       "grid.yaml:2:1: sample: names no parameter to sample; add one such as lr: {loguniform: [0.0001, "
       "0.1]}"},
      {"  n: 4\n  lrr: {uniform: [0.01, 0.1]}\n",
       "grid.yaml:4:3: sample.lrr: unknown parameter 'lrr'; did you mean 'lr'?"},
      {"  n: 4\n  num_samples: 8\n",
       "grid.yaml:4:3: sample.num_samples: unknown key 'num_samples': gridrun calls the "
       "number of points 'n'"},
      {"  n: 4\n  lr: {loguniferm: [0.01, 0.1]}\n",
       "grid.yaml:4:8: sample.lr: unknown distribution 'loguniferm'; did you mean 'loguniform'?"},
      {"  n: 4\n  ranks: {uniform: [1, 4]}\n",
       "grid.yaml:4:11: sample.ranks.uniform: uniform does not fit 'ranks', an integer: sample it with "
       "randint or "
       "lograndint (or choice)"},
      {"  n: 4\n  lr: {randint: [1, 4]}\n",
       "grid.yaml:4:8: sample.lr.randint: randint does not fit 'lr', a number: sample it with uniform or "
       "loguniform "
       "(or choice)"},
      {"  n: 4\n  model: {uniform: [1, 4]}\n",
       "grid.yaml:4:11: sample.model.uniform: uniform does not fit 'model', a string: sample it with choice"},
      {"  n: 4\n  model: {choice: [mlp, resnet]}\n",
       "grid.yaml:4:25: sample.model.choice[1]: unknown model 'resnet'; did you mean 'resnet18'?"},
      {"  n: 4\n  ranks: {choice: [1, 2, 1]}\n", "grid.yaml:4:26: sample.ranks.choice[2]: 1 is listed twice"},
      {"  n: 4\n  lr: [0.1, 0.2]\n",
       "grid.yaml:4:7: sample.lr: expected a distribution such as {loguniform: [0.0001, 0.1]}; a list of "
       "values is "
       "{choice: [...]}"},
      {"  n: 4\n  lr: {uniform: [0.01]}\n",
       "grid.yaml:4:17: sample.lr.uniform: expected [low, high], got 1 values"},
  };
  for (const auto& [body, want] : cases) EXPECT_EQ(error_of(head + body), want) << body;
  // On two axes: the later one is named, with the first.
  EXPECT_EQ(
      error_of("name: s\ngrid: {lr: [0.1, 0.2]}\nsample:\n  n: 2\n  lr: {uniform: [0.01, 0.1]}\n"),
      "grid.yaml:5:3: sample.lr: 'lr' is already varied at grid.lr; a parameter can be on one axis only");
  EXPECT_EQ(error_of("name: s\nsampel: {n: 2}\n"),
            "grid.yaml:2:1: sampel: unknown key 'sampel'; did you mean 'sample'?");
}

// ---- --set / --only that take a compare axis away (issue 58) -----------------------------------

namespace {
const char* kCompared =
    "name: c\n"
    "grid:\n"
    "  model: [mlp, lenet]\n"
    "  ranks: [1, 2]\n"
    "compare: {by: ranks}\n";
}

TEST(JobsGridCompareGone, SetOfTheCompareKeySaysSo) {
  gj::LoadOptions o;
  o.warn_lost_compare = true;
  o.overrides = gj::parse_overrides({"ranks=1"});
  const auto ex = load(kCompared, o);
  EXPECT_EQ(ex.jobs.size(), 2u);
  EXPECT_EQ(ex.compare_gone,
            "--set ranks=1 leaves one value of ranks, which this grid compares (compare: ranks, at "
            "grid.yaml:5:15): the report will have no ranks comparison");
  // Not asked (status, report): not looked for. A list keeps the comparison; so does --set of
  // another key.
  o.warn_lost_compare = false;
  EXPECT_EQ(load(kCompared, o).compare_gone, "");
  o.warn_lost_compare = true;
  o.overrides = gj::parse_overrides({"ranks=1,4"});
  EXPECT_EQ(load(kCompared, o).compare_gone, "");
  o.overrides = gj::parse_overrides({"model=mlp"});
  EXPECT_EQ(load(kCompared, o).compare_gone, "");
}

// global_batch compared, batch_per_rank set: the other batch key is named.
TEST(JobsGridCompareGone, TheOtherBatchKeyIsNamed) {
  gj::LoadOptions o;
  o.warn_lost_compare = true;
  o.overrides = gj::parse_overrides({"batch_per_rank=32", "lr=0.2"});
  const auto ex = load("name: c\ngrid: {global_batch: [64, 128]}\ncompare: {by: global_batch}\n", o);
  EXPECT_EQ(ex.compare_gone.rfind("--set batch_per_rank=32 leaves one value of global_batch", 0), 0u)
      << ex.compare_gone;
}

TEST(JobsGridCompareGone, OnlyOfTheCompareKeySaysSo) {
  const auto ex = load(kCompared);
  const auto only = gj::parse_selectors({"ranks=2"}, "--only", {"id"});
  EXPECT_EQ(gj::lost_compare_warning(ex, gj::select_jobs(ex.jobs, only), only),
            "--only ranks=2 leaves one value of ranks, which this grid compares (compare: ranks, at "
            "grid.yaml:5:15): the report will have no ranks comparison");
  const auto id = gj::parse_selectors({"id=" + ex.jobs[0].id}, "--only", {"id"});
  EXPECT_EQ(gj::lost_compare_warning(ex, gj::select_jobs(ex.jobs, id), id).rfind("--only id=", 0), 0u);
  const auto model = gj::parse_selectors({"model=mlp"}, "--only", {"id"});
  EXPECT_EQ(gj::lost_compare_warning(ex, gj::select_jobs(ex.jobs, model), model), "");
  // No compare: nothing to lose.
  const auto plain = load("name: c\ngrid: {ranks: [1, 2]}\n");
  EXPECT_EQ(gj::lost_compare_warning(plain, gj::select_jobs(plain.jobs, only), only), "");
}

// ---- a command grid's own parameters (params:, issue 56) --------------------------------------

namespace {
// `echo` is on PATH and names no script: a command grid that needs no file.
constexpr const char* kOwn =
    "name: own\n"
    "command: [echo, \"--dropout={dropout}\", \"--sched={sched}\", \"{warmup}\", \"{lr}\"]\n"
    "params:\n"
    "  dropout: 0.1\n"
    "  warmup: {default: 10, min: 0, max: 100}\n"
    "  sched: {default: cosine, choices: [cosine, linear]}\n"
    "grid: {dropout: [0.1, 0.3]}\n"
    "zip: {sched: [cosine, linear], warmup: [0, 50]}\n"
    "exclude: [{dropout: 0.3, sched: linear}]\n"
    "seeds: [1, 2]\n";
}  // namespace

TEST(JobsGridOwnParams, ExpandedZippedExcludedSeededAndInTheId) {
  const auto ex = load(kOwn);
  ASSERT_EQ(ex.jobs.size(), 6u);  // 2 dropout x 2 zip x 2 seeds, less the 2 excluded
  EXPECT_EQ(ex.jobs[0].params.user_params, R"({"dropout":0.1,"sched":"cosine","warmup":0})");
  EXPECT_EQ(std::get<double>(gj::get_param(ex.jobs[0].params, "dropout")), 0.1);
  EXPECT_EQ(std::get<std::int64_t>(gj::get_param(ex.jobs[0].params, "warmup")), 0);
  EXPECT_EQ(std::get<std::string>(gj::get_param(ex.jobs.back().params, "sched")), "cosine");
  EXPECT_EQ(std::get<double>(gj::get_param(ex.jobs.back().params, "dropout")), 0.3);
  EXPECT_THROW(gj::get_param(ex.jobs[0].params, "nope"), std::invalid_argument);
  for (const auto& j : ex.jobs) {
    EXPECT_EQ(j.id, gj::job_id(j.params)) << j.canonical;  // the id rule holds: user_params is a member
    EXPECT_NE(j.canonical.find("\"user_params\":"), std::string::npos);
  }
  // The own names vary (plan's and the report's columns); user_params itself is no column.
  for (const char* k : {"dropout", "sched", "warmup", "seed"})
    EXPECT_NE(std::find(ex.varying.begin(), ex.varying.end(), k), ex.varying.end()) << k;
  EXPECT_EQ(std::find(ex.varying.begin(), ex.varying.end(), "user_params"), ex.varying.end());
  // Placeholders and the program's view of its parameters.
  const auto argv = gj::resolve_command(ex.jobs[0].params, ex.jobs[0].id, ex.name);
  EXPECT_EQ(argv, (std::vector<std::string>{"echo", "--dropout=0.1", "--sched=cosine", "0", "0.1"}));
  const std::string seen = gj::program_params_json(ex.jobs[0].params);
  EXPECT_NE(seen.find("\"dropout\":0.1,"), std::string::npos) << seen;
  EXPECT_EQ(seen.find("user_params"), std::string::npos) << seen;
  // Another value of an own parameter is another job; the same values, the same ids.
  EXPECT_EQ(load(kOwn).jobs[3].id, ex.jobs[3].id);
  const std::string other =
      std::string(kOwn).replace(std::string(kOwn).find("dropout: 0.1"), 12, "dropout: 0.2");
  EXPECT_EQ(load(other).jobs[0].id, ex.jobs[0].id);  // a default the grid overrides everywhere
  gj::LoadOptions o;
  o.overrides = gj::parse_overrides({"warmup=7"});
  const auto set = load(kOwn, o);
  EXPECT_EQ(std::get<std::int64_t>(gj::get_param(set.jobs[0].params, "warmup")), 7);
  EXPECT_NE(set.jobs[0].id, ex.jobs[0].id);
  o.overrides = gj::parse_overrides({"dropout=0.5,0.7"});
  EXPECT_EQ(load(kOwn, o).jobs.size(), 8u);  // the --set list replaces the grid's axis; nothing excluded
  // --only by an own parameter, typed as the job's value.
  const auto only = gj::parse_selectors({"dropout=0.30"}, "--only", {"id"});
  EXPECT_EQ(gj::select_jobs(ex.jobs, only).size(), 2u);
}

TEST(JobsGridOwnParams, BadDeclarationsAndValuesNameTheirLine) {
  const std::string head = "name: own\ncommand: [echo, \"{dropout}\"]\n";
  const std::string plain = "name: own\ncommand: [echo]\n";  // for errors of params: alone
  EXPECT_EQ(error_of(head + "params: {dropout: 0.1}\ngrid: {dropout: [0.1, fast]}\n"),
            "grid.yaml:4:23: grid.dropout[1]: expected a number, got 'fast'");
  EXPECT_EQ(error_of(head + "params: {dropout: {default: 0.1, max: 1}}\ngrid: {dropout: [2.0]}\n"),
            "grid.yaml:4:18: grid.dropout[0]: 2.0 is out of range (must be <= 1)");
  EXPECT_EQ(error_of(plain + "params: {lr: 0.1}\n"),
            "grid.yaml:3:10: params.lr: 'lr' is one of gridrun's parameters: set it under defaults: or "
            "grid:, do not declare it");
  EXPECT_EQ(error_of(plain + "params: {dropout: {min: 0}}\n"),
            "grid.yaml:3:10: params.dropout: needs default: (the value of a job that sets none)");
  EXPECT_EQ(error_of(plain + "params: {dropout: {default: 0.1, maxi: 1}}\n"),
            "grid.yaml:3:34: params.dropout.maxi: unknown key 'maxi'; did you mean 'max'?");
  EXPECT_EQ(error_of(head + "params: {dropout: 0.1}\ndefaults: {dropuot: 0.2}\n"),
            "grid.yaml:4:12: defaults.dropuot: unknown parameter 'dropuot'; did you mean 'dropout'? (your "
            "program's own are declared under params:)");
  EXPECT_EQ(error_of("name: own\nparams: {dropout: 0.1}\n"),
            "grid.yaml:2:1: params: params: declares your own program's parameters: a command: grid only "
            "(gridrun-train's are fixed: gridrun plan --list-params)");
  EXPECT_EQ(error_of("name: own\ncommand: [echo, \"{dropuot}\"]\nparams: {dropout: 0.1}\n"),
            "grid.yaml:2:17: command[1]: '{dropuot}' is no parameter; did you mean {dropout}? (placeholders: "
            "the job's parameters, "
            "{id}, {run}; {{ and }} for braces)");
  EXPECT_EQ(error_of(head + "params: {dropout: 0.1}\ndefaults: {user_params: x}\n"),
            "grid.yaml:4:12: defaults.user_params: the program's own parameters are declared under params: "
            "and set by name");
  gj::LoadOptions o;
  o.overrides = gj::parse_overrides({"dropout=x"});
  try {
    load(head + "params: {dropout: 0.1}\n", o);
    ADD_FAILURE() << "--set dropout=x accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_STREQ(e.what(), "--set dropout=x: expected a number, got 'x'");
  }
}
