// Unit tests of jobs::check (every rule of a whole job, shared by `gridrun plan` and
// gridrun-train), jobs::check_values and jobs::resolve_batch.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gridrun/jobs/footprint.hpp"
#include "gridrun/jobs/job.hpp"
#include "gridrun/jobs/params.hpp"

namespace gj = gridrun::jobs;

namespace {

// "key: message" of every problem, in rule order.
std::vector<std::string> problems(const gj::JobParams& p) {
  std::vector<std::string> out;
  for (const auto& b : gj::check(p)) out.push_back(b.key + ": " + b.message);
  return out;
}

gj::JobParams gpu() {
  gj::JobParams p;
  p.device = gj::Device::gpu;
  return p;
}

gj::JobParams inference() {
  gj::JobParams p;
  p.task = gj::Task::inference;
  return p;
}

using V = std::vector<std::string>;

}  // namespace

TEST(JobsCheck, DefaultsAndExamplesPass) {
  EXPECT_EQ(problems(gj::JobParams{}), V{});
  gj::JobParams p = gpu();
  p.ranks = 4;
  p.batch_per_rank = 64;
  p.global_batch = 256;
  p.precision = gj::Precision::bf16;
  EXPECT_EQ(problems(p), V{});
  p = inference();
  p.quantize = "int8";
  p.epochs = 0;  // inference takes no epochs
  p.checkpoint = "abc";
  EXPECT_EQ(problems(p), V{});
  p = gpu();
  p.cuda_graph = true;
  p.precision = gj::Precision::bf16;
  p.jobs_per_gpu = 4;
  EXPECT_EQ(problems(p), V{});
}

TEST(JobsCheck, DevicePrecisionBatchAndStop) {
  gj::JobParams p = gpu();
  p.ranks = 8;
  p.global_batch = 256;
  EXPECT_EQ(problems(p), V{"ranks: 8 is out of range for device gpu (1-4)"});
  p = gj::JobParams{};
  p.precision = gj::Precision::fp16;
  auto b = gj::check(p);
  ASSERT_EQ(b.size(), 1u);
  EXPECT_EQ(b[0].message, "fp16 needs device gpu");
  EXPECT_EQ(b[0].related, "device");
  EXPECT_EQ(b[0].context, "this job has device cpu");
  p = gj::JobParams{};
  p.global_batch = 33;
  EXPECT_EQ(problems(p), V{"global_batch: global_batch=33 != batch_per_rank * ranks = 32"});
  p = gj::JobParams{};
  p.epochs = 0;
  EXPECT_EQ(problems(p), V{"epochs: epochs and max_steps are both 0, so the job would never stop; set one"});
  p.max_steps = 10;
  EXPECT_EQ(problems(p), V{});
}

TEST(JobsCheck, TrainOrInferenceOnly) {
  gj::JobParams p = gpu();
  p.task = gj::Task::inference;
  p.precision = gj::Precision::bf16;
  EXPECT_EQ(problems(p), V{"precision: precision=bf16 needs task=train (inference runs fp32)"});
  p = gj::JobParams{};
  p.checkpoint = "runs/x/checkpoints/abc";
  EXPECT_EQ(problems(p), V{"checkpoint: checkpoint=runs/x/checkpoints/abc applies to "
                           "task=inference only (training continues from its own checkpoints "
                           "with --resume)"});
  p = gj::JobParams{};
  p.quantize = "int8";
  EXPECT_EQ(problems(p), V{"quantize: quantize=int8 needs task=inference"});
}

TEST(JobsCheck, Quantize) {
  gj::JobParams p = inference();
  p.quantize = "int8";
  p.device = gj::Device::gpu;
  EXPECT_EQ(problems(p), V{"quantize: quantize=int8 needs device=cpu (dynamic int8 linear layers "
                           "are a CPU feature)"});
  p = inference();
  p.quantize = "int8";
  p.model = "transformer";
  ASSERT_EQ(problems(p).size(), 1u);
  EXPECT_EQ(problems(p)[0].rfind("quantize: quantize=int8 is not available for model=transformer", 0), 0u);
}

TEST(JobsCheck, DataSets) {
  gj::JobParams p;
  for (const char* ds : {"cifar10", "mnist", "text"}) {
    p.dataset = ds;
    p.model = std::string(ds) == "text" ? "transformer" : "lenet";
    EXPECT_EQ(problems(p), V{"dataset: dataset=" + std::string(ds) +
                             " needs data_dir (folder with the data set's files)"});
    p.data_dir = "/data";
    EXPECT_EQ(problems(p), V{}) << ds;
    p.data_dir.clear();
  }
  p = gj::JobParams{};
  p.dataset = "fashion-mnist";  // Debian's folder by default
  EXPECT_EQ(problems(p), V{});
  p.model = "transformer";
  EXPECT_EQ(problems(p), V{"dataset: dataset=fashion-mnist gives images, but model=transformer "
                           "takes token ids (use dataset=text or dataset=synthetic)"});
  p = gj::JobParams{};
  p.dataset = "text";
  p.data_dir = "d";
  EXPECT_EQ(problems(p), V{"dataset: dataset=text gives token ids, but model=mlp takes images (use "
                           "model=transformer)"});
  p = gj::JobParams{};
  p.model = "transformer";  // synthetic gives token ids to a text model
  EXPECT_EQ(problems(p), V{});
  p.augment = "flip";
  EXPECT_EQ(problems(p), V{"augment: augment=flip needs images; model=transformer reads token ids"});
}

TEST(JobsCheck, CudaGraph) {
  const std::string c = "cuda_graph: cuda_graph=true needs ";
  gj::JobParams p = gpu();
  p.cuda_graph = true;
  EXPECT_EQ(problems(p), V{});
  p.ranks = 2;
  p.global_batch = 64;
  EXPECT_EQ(problems(p), V{c + "ranks=1 (the gradient allreduce is not captured)"});
  p = gpu();
  p.cuda_graph = true;
  p.optimizer = "adamw";
  EXPECT_EQ(problems(p), V{c + "optimizer=sgd (only the foreach SGD step is captured)"});
  p = gpu();
  p.cuda_graph = true;
  p.precision = gj::Precision::fp16;
  EXPECT_EQ(problems(p), V{c + "precision fp32 or bf16 (fp16 loss scaling reads the host every step)"});
  p = gj::JobParams{};
  p.cuda_graph = true;
  EXPECT_EQ(problems(p), V{c + "device=gpu"});
  p = gpu();
  p.cuda_graph = true;
  p.task = gj::Task::inference;
  EXPECT_EQ(problems(p), V{c + "task=train"});
}

TEST(JobsCheck, JobsPerGpu) {
  gj::JobParams p;
  p.jobs_per_gpu = 4;
  EXPECT_EQ(problems(p), V{"jobs_per_gpu: jobs_per_gpu=4 needs device=gpu"});
  p = gpu();
  p.jobs_per_gpu = 2;
  p.ranks = 2;
  p.global_batch = 64;
  EXPECT_EQ(problems(p), V{"jobs_per_gpu: jobs_per_gpu=2 needs ranks=1 (a shared GPU runs one-rank "
                           "jobs only)"});
}

TEST(JobsCheck, Nesterov) {
  gj::JobParams p;
  p.nesterov = true;
  EXPECT_EQ(problems(p), V{});
  p.momentum = 0;
  EXPECT_EQ(problems(p), V{"nesterov: nesterov=true needs momentum > 0"});
  EXPECT_EQ(gj::check(p)[0].context, "this job has momentum 0.0");
  p.optimizer = "adam";  // adam has no Nesterov switch; the flag is ignored there
  EXPECT_EQ(problems(p), V{});
}

TEST(JobsCheck, MlpHidden) {
  gj::JobParams p;
  for (const char* ok : {"256,128", "1", "4096,4096,10", "1,2,3,4,5,6,7,8"}) {
    p.mlp_hidden = ok;
    EXPECT_EQ(problems(p), V{}) << ok;
  }
  for (const char* bad : {"", "0", "256,", ",256", "256,,128", "256, 128", "0256", "-1", "1.5", "abc",
                          "1,2,3,4,5,6,7,8,9", "99999999"}) {
    p.mlp_hidden = bad;
    EXPECT_EQ(problems(p), V{"mlp_hidden: '" + std::string(bad) +
                             "' is not a list of 1 to 8 positive integers separated by commas "
                             "(e.g. 256,128)"})
        << bad;
  }
}

TEST(JobsCheck, EveryProblemIsReported) {
  gj::JobParams p;
  p.precision = gj::Precision::bf16;
  p.quantize = "int8";
  p.dataset = "mnist";
  p.cuda_graph = true;
  const auto all = gj::check(p);
  EXPECT_GE(all.size(), 4u);
  for (const auto& b : all) EXPECT_NE(gj::find_param(b.key), nullptr) << b.key;
}

TEST(JobsCheckValues, TypesChoicesAndRanges) {
  EXPECT_TRUE(gj::check_values(gj::from_struct(gj::JobParams{})).empty());
  gj::Params p{{"lr", 0.0},
               {"ranks", std::string("two")},
               {"model", std::string("resnet")},
               {"nope", true},
               {"jobs_per_gpu", std::int64_t{65}}};
  std::vector<std::string> got;
  for (const auto& b : gj::check_values(p)) got.push_back(b.key + ": " + b.message);
  EXPECT_EQ(got, (V{"jobs_per_gpu: 65 is out of range (1-64)", "lr: 0.0 is out of range (must be > 0)",
                    "model: unknown model 'resnet'; did you mean 'resnet18'?", "nope: unknown parameter",
                    "ranks: expected an integer"}));
}

TEST(JobsResolveBatch, DerivesTheOtherField) {
  gj::JobParams p;
  p.ranks = 4;
  p.batch_per_rank = 16;
  EXPECT_FALSE(gj::resolve_batch(p, gj::BatchGiven::PerRank));
  EXPECT_EQ(p.global_batch, 64);
  p.global_batch = 256;
  EXPECT_FALSE(gj::resolve_batch(p, gj::BatchGiven::Global));
  EXPECT_EQ(p.batch_per_rank, 64);
  EXPECT_TRUE(gj::check(p).empty());
}

TEST(JobsResolveBatch, IndivisibleGlobalBatchIsAProblemAndChangesNothing) {
  gj::JobParams p;
  p.ranks = 3;
  p.global_batch = 100;
  p.batch_per_rank = 7;
  auto bad = gj::resolve_batch(p, gj::BatchGiven::Global);
  ASSERT_TRUE(bad);
  EXPECT_EQ(bad->key, "global_batch");
  EXPECT_EQ(bad->message, "global_batch 100 is not divisible by ranks 3");
  EXPECT_EQ(bad->related, "ranks");
  EXPECT_EQ(p.batch_per_rank, 7);
  EXPECT_EQ(p.global_batch, 100);
}

// nodes (issue 23): ranks spread evenly over the hosts; the GPU limit is per host.
TEST(JobsCheck, RanksMustSpreadEvenlyOverNodes) {
  gj::JobParams p;
  p.ranks = 3;
  p.global_batch = 96;
  p.nodes = 2;
  EXPECT_EQ(problems(p), V{"nodes: ranks=3 cannot be spread evenly over nodes=2 (ranks must be a multiple "
                           "of nodes)"});
  p.ranks = 1;
  p.global_batch = 32;
  EXPECT_EQ(problems(p).size(), 1u);  // more nodes than ranks
  p = gpu();
  p.ranks = 8;
  p.global_batch = 256;
  p.nodes = 2;
  EXPECT_EQ(problems(p), V{});  // 4 GPUs on each of 2 hosts
  p.nodes = 1;
  EXPECT_EQ(problems(p), V{"ranks: 8 is out of range for device gpu (1-4)"});
  p.ranks = 10;
  p.global_batch = 320;
  p.nodes = 2;
  EXPECT_EQ(problems(p),
            V{"ranks: 10 is out of range for device gpu (1-4 per node, here 5 on each of 2 nodes)"});
}

// Issue 45: a derived count that would wrap is a problem naming the keys, never a wrapped value
// (4611686018427387912 x 4 was a global batch of 32; 2^62 ranks x 4 threads was 0 cores).
TEST(JobsCheck, DerivedCountsThatOverflowAreProblems) {
  const std::int64_t big = 4611686018427387912;  // 2^62 + 8
  gj::JobParams p;
  p.batch_per_rank = big;
  p.ranks = 4;
  EXPECT_EQ(gj::resolve_batch(p, gj::BatchGiven::PerRank)->message,
            "batch_per_rank * ranks = 4611686018427387912 * 4 overflows (global_batch beyond 2^63-1)");
  EXPECT_EQ(gj::resolve_batch(p, gj::BatchGiven::PerRank)->related, "ranks");
  p.global_batch = 32;  // what the wrapped product was
  EXPECT_EQ(
      problems(p),
      V{"batch_per_rank: batch_per_rank * ranks = 4611686018427387912 * 4 overflows (global_batch beyond "
        "2^63-1)"});

  p = gj::JobParams{};
  p.ranks = std::int64_t{1} << 62;
  p.threads_per_rank = 4;
  p.batch_per_rank = 1;
  p.global_batch = p.ranks;
  EXPECT_EQ(problems(p),
            V{"ranks: ranks=4611686018427387904 is more than one job can have (at most 2147483647)"});
  p.ranks = 65536;
  p.threads_per_rank = 65536;
  p.global_batch = 65536;
  EXPECT_EQ(problems(p),
            V{"threads_per_rank: ranks * threads_per_rank = 4294967296 cores is more than one job "
              "can have (at most 2147483647)"});
  p.ranks = 2;
  p.global_batch = 2;
  p.threads_per_rank = std::numeric_limits<std::int64_t>::max();
  EXPECT_EQ(problems(p),
            V{"threads_per_rank: ranks * threads_per_rank = 2 * 9223372036854775807 overflows (cores "
              "beyond 2^63-1)"});
  // The largest job that fits is fine.
  p.ranks = 1;
  p.global_batch = 1;
  p.threads_per_rank = 2147483647;
  EXPECT_EQ(problems(p), V{});

  p = gj::JobParams{};
  p.epochs = std::int64_t{1} << 62;
  p.train_samples = 4;
  EXPECT_EQ(problems(p),
            V{"epochs: epochs * train_samples = 4611686018427387904 * 4 overflows (samples beyond "
              "2^63-1)"});
}

// What a job occupies never wraps either (a job that skipped check: a hand-written job file).
TEST(JobsCheck, FootprintSaturates) {
  gj::JobParams p;
  p.ranks = std::int64_t{1} << 62;
  p.threads_per_rank = 4;
  EXPECT_EQ(gj::footprint(p).cores, std::numeric_limits<std::int64_t>::max());
}
