// Unit tests of the runner's torch-free pieces: epoch sharding, learning-rate schedules, options.
#include <gtest/gtest.h>
#include <torch/torch.h>

#include <unistd.h>
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "archive_check.hpp"
#include "epoch_sampler.hpp"
#include "foreach_sgd.hpp"
#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/jobs/job.hpp"
#include "gridrun/run/run_dir.hpp"
#include "gridrun/runner/errors.hpp"
#include "gridrun/runner/options.hpp"
#include "lr_schedule.hpp"

using namespace gridrun::runner;

TEST(Sampler, RanksCoverTheSingleRankBatchExactly) {
  // 2 ranks x 4 == 1 rank x 8, step by step: the basis of the equivalence check.
  EpochSampler one(100, 8, 0, 1, 7), r0(100, 4, 0, 2, 7), r1(100, 4, 1, 2, 7);
  ASSERT_EQ(one.steps_per_epoch(), 12);
  ASSERT_EQ(r0.steps_per_epoch(), 12);
  for (int e = 0; e < 3; ++e)
    for (int s = 0; s < 12; ++s) {
      auto a = one.indices(e, s), b = r0.indices(e, s), c = r1.indices(e, s);
      b.insert(b.end(), c.begin(), c.end());
      EXPECT_EQ(a, b);
    }
}

TEST(Sampler, ShardsAreDisjointAndEpochsReshuffle) {
  EpochSampler r0(64, 8, 0, 2, 1), r1(64, 8, 1, 2, 1);
  std::set<std::int64_t> seen;
  for (int s = 0; s < r0.steps_per_epoch(); ++s) {
    for (auto i : r0.indices(0, s)) EXPECT_TRUE(seen.insert(i).second);
    for (auto i : r1.indices(0, s)) EXPECT_TRUE(seen.insert(i).second);
  }
  EXPECT_EQ(seen.size(), 64u);
  EXPECT_NE(EpochSampler::permutation(64, 1, 0), EpochSampler::permutation(64, 1, 1));
  EXPECT_EQ(EpochSampler::permutation(64, 1, 2), EpochSampler::permutation(64, 1, 2));
  auto p = EpochSampler::permutation(1000, 9, 0);
  std::sort(p.begin(), p.end());
  for (int i = 0; i < 1000; ++i) ASSERT_EQ(p[i], i);
}

TEST(Sampler, DropLastAndTooSmall) {
  EXPECT_EQ(EpochSampler(99, 10, 0, 2, 0).steps_per_epoch(), 4);
  EXPECT_THROW(EpochSampler(15, 8, 0, 2, 0), BadInput);
  auto shard = eval_shard(7, 1, 2);
  EXPECT_EQ(shard, (std::vector<std::int64_t>{1, 3, 5}));
}

TEST(Schedule, WarmupConstantStepCosine) {
  LrSchedule c({"constant", 0.4, 4, 100});
  EXPECT_DOUBLE_EQ(c.lr_at(0), 0.1);
  EXPECT_DOUBLE_EQ(c.lr_at(3), 0.4);
  EXPECT_DOUBLE_EQ(c.lr_at(50), 0.4);
  LrSchedule s({"step", 1.0, 0, 90});
  EXPECT_DOUBLE_EQ(s.lr_at(0), 1.0);
  EXPECT_NEAR(s.lr_at(30), 0.1, 1e-12);
  EXPECT_NEAR(s.lr_at(89), 0.01, 1e-12);
  LrSchedule k({"cosine", 1.0, 10, 110});
  EXPECT_DOUBLE_EQ(k.lr_at(10), 1.0);
  EXPECT_NEAR(k.lr_at(60), 0.5, 1e-12);
  EXPECT_NEAR(k.lr_at(110), 0.0, 1e-12);
  EXPECT_THROW(LrSchedule({"linear", 1.0, 0, 10}), BadInput);
}

namespace {
ParseResult parse(std::vector<const char*> args) {
  args.insert(args.begin(), "gridrun-train");
  return parse_options(static_cast<int>(args.size()), args.data());
}

// A job file of an mlp job on synthetic data with `ranks` ranks (16 samples a rank) and `seed`.
std::string write_mlp_job(const std::string& path, const std::string& run, std::int64_t ranks,
                          std::int64_t seed) {
  gridrun::jobs::JobParams p;
  p.model = "mlp";
  p.dataset = "synthetic";
  p.ranks = ranks;
  p.batch_per_rank = 16;
  p.global_batch = 16 * ranks;
  p.seed = seed;
  gridrun::jobs::write_job_file(path, gridrun::jobs::make_job(run, 0, p));
  return path;
}
}  // namespace

// A job chained after another in one process (--then-job) must share its process key
// (jobs::process_key: device, ranks, threads, nodes); any other parameter may differ.
TEST(Options, AChainedJobMustShareTheFirstJobsProcessKey) {
  const auto dir = std::filesystem::temp_directory_path() / ("gridrun-chain-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  auto job_file = [&](const std::string& name, std::int64_t ranks, std::int64_t seed) {
    return write_mlp_job((dir / name).string(), "chain", ranks, seed);
  };
  const std::string first = job_file("first.json", 1, 0), same = job_file("same.json", 1, 7),
                    wider = job_file("wider.json", 2, 0);
  const std::vector<const char*> argv = {"gridrun-train", "--job", first.c_str(), "--out", dir.c_str()};
  const RunnerOptions o = parse_options(static_cast<int>(argv.size()), argv.data()).options;
  EXPECT_EQ(chained_options(same, o).job.seed, 7);
  try {
    chained_options(wider, o);
    ADD_FAILURE() << "a 2-rank job chained after a 1-rank one";
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("same process"), std::string::npos) << e.what();
  }
  std::filesystem::remove_all(dir);
}

// A warm worker's next job comes as a typed task (run::WorkerTask), not as a command line rebuilt
// and parsed again: the process's flags (--out, the parameter flags) carry over, the job, its id,
// checkpoint folder, resume, heartbeat and launch time are the task's; the same process key holds.
TEST(Options, AWorkersNextJobIsTheTasksWithTheProcesssFlags) {
  const auto dir = std::filesystem::temp_directory_path() / ("gridrun-next-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir / "results");
  auto job_file = [&](const std::string& name, std::int64_t ranks, std::int64_t seed) {
    return write_mlp_job((dir / name).string(), "warm", ranks, seed);
  };
  const std::string first = job_file("first.json", 1, 0), next = job_file("next.json", 1, 9),
                    wider = job_file("wider.json", 2, 0);
  const std::string out = (dir / "results").string();
  const std::vector<const char*> argv = {"gridrun-train", "--job",       first.c_str(), "--out",
                                         out.c_str(),     "--lr",        "0.25",        "--then-job",
                                         first.c_str(),   "--heartbeat", "/tmp/hb"};
  RunnerOptions o = parse_options(static_cast<int>(argv.size()), argv.data()).options;
  o.main_unix = 5;  // as main and the first job leave them
  o.comm_s = 0.5;
  gridrun::run::WorkerTask t;
  t.job_file = next;
  t.resume = true;
  t.launched_at = 1234.5;
  const RunnerOptions n = next_job_options(t, o);
  EXPECT_EQ(n.job_file, next);
  EXPECT_EQ(n.job.seed, 9);
  EXPECT_DOUBLE_EQ(n.job.lr, 0.25) << "the parameter flag applies to every job of the process";
  EXPECT_NE(n.id, o.id);
  EXPECT_EQ(n.out_dir, out);
  EXPECT_EQ(n.checkpoint_dir, gridrun::run::RunDir::of_results_dir(out).checkpoint_dir(n.id));
  EXPECT_TRUE(n.resume);
  EXPECT_EQ(n.heartbeat_file, "") << "the task's heartbeat, not the first job's";
  EXPECT_DOUBLE_EQ(n.launched_at, 1234.5);
  EXPECT_TRUE(n.warm);
  EXPECT_TRUE(n.then_jobs.empty());
  EXPECT_EQ(n.main_unix, 0);
  EXPECT_EQ(n.comm_s, 0);
  // The same id as the launcher computes for that job file with the same flags.
  const std::vector<const char*> cold = {"gridrun-train", "--job", next.c_str(), "--out",
                                         out.c_str(),     "--lr",  "0.25"};
  EXPECT_EQ(n.id, parse_options(static_cast<int>(cold.size()), cold.data()).options.id);
  t.job_file = wider;
  EXPECT_THROW(next_job_options(t, o), BadInput);
  std::filesystem::remove_all(dir);
}

// Issue 34: a manual lenet run without --lr trains at lenet's default 0.05, as a planned job would.
TEST(Options, ManualLenetGetsItsDefaultLr) {
  EXPECT_DOUBLE_EQ(parse({"--out", "/tmp/x", "--model", "lenet"}).options.job.lr, 0.05);
  EXPECT_DOUBLE_EQ(parse({"--out", "/tmp/x", "--model", "lenet", "--lr", "0.1"}).options.job.lr, 0.1);
  EXPECT_DOUBLE_EQ(parse({"--out", "/tmp/x", "--model", "mlp"}).options.job.lr, 0.1);
  EXPECT_DOUBLE_EQ(parse({"--out", "/tmp/x", "--model", "lenet", "--task", "inference"}).options.job.lr, 0.1);
}

TEST(Options, ParamFlagsOverrideAndIdFollowsParams) {
  auto r = parse({"--out", "/tmp/x", "--model", "lenet", "--ranks", "2", "--batch-per-rank", "16",
                  "--overlap", "false", "--lr", "0.2"});
  const auto& o = r.options;
  EXPECT_EQ(o.job.model, "lenet");
  EXPECT_EQ(o.job.ranks, 2);
  EXPECT_EQ(o.job.global_batch, 32);
  EXPECT_FALSE(o.job.overlap);
  EXPECT_DOUBLE_EQ(o.job.lr, 0.2);
  EXPECT_EQ(o.run, "manual");
  EXPECT_EQ(o.id, gridrun::jobs::job_id(o.job));
  EXPECT_EQ(o.checkpoint_dir, "/tmp/checkpoints/" + o.id);  // the run of results folder /tmp/x
  auto g = parse({"--out", "/tmp/x", "--ranks", "4", "--global-batch", "64"});
  EXPECT_EQ(g.options.job.batch_per_rank, 16);
}

TEST(Options, BadValuesNameTheFlag) {
  try {
    parse({"--out", "/tmp/x", "--lr", "fast"});
    FAIL();
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find("--lr"), std::string::npos) << e.what();
  }
  EXPECT_THROW(parse({"--out", "/tmp/x", "--bogus"}), BadInput);
  EXPECT_THROW(parse({"--model", "mlp"}), BadInput);                          // --out missing
  EXPECT_THROW(parse({"--out", "/tmp/x", "--precision", "bf16"}), BadInput);  // cpu + bf16
  EXPECT_THROW(parse({"--out", "/tmp/x", "--epochs", "0"}), BadInput);        // unbounded, no max_steps
  EXPECT_THROW(parse({"--out", "/tmp/x", "--log-every", "0"}), BadInput);
  EXPECT_THROW(parse({"--out", "/tmp/x", "--job", "/nonexistent/job.json"}), BadInput);
}

TEST(Options, InferenceParametersAreChecked) {
  auto o = parse({"--out", "/tmp/x", "--task", "inference", "--epochs", "0", "--quantize", "int8",
                  "--infer-batches", "7", "--checkpoint", "abc"})
               .options;
  EXPECT_EQ(o.job.task, gridrun::jobs::Task::inference);  // epochs=0 needs no max_steps for inference
  EXPECT_EQ(o.job.infer_batches, 7);
  EXPECT_EQ(o.job.quantize, "int8");
  EXPECT_EQ(o.job.checkpoint, "abc");
  auto expect_bad = [](std::vector<const char*> args, const std::string& needle) {
    try {
      parse(args);
      ADD_FAILURE() << "accepted; expected an error naming " << needle;
    } catch (const BadInput& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  expect_bad({"--out", "/tmp/x", "--checkpoint", "abc"}, "checkpoint=abc");  // task=train
  expect_bad({"--out", "/tmp/x", "--quantize", "int8"}, "quantize=int8");    // task=train
  expect_bad({"--out", "/tmp/x", "--task", "inference", "--quantize", "int4"}, "--quantize");
  expect_bad({"--out", "/tmp/x", "--task", "inference", "--quantize", "int8", "--model", "transformer"},
             "transformer");
  expect_bad({"--out", "/tmp/x", "--task", "inference", "--quantize", "int8", "--device", "gpu"},
             "device=cpu");
  expect_bad({"--out", "/tmp/x", "--task", "inference", "--infer-batches", "0"}, "--infer-batches");
}

// ForeachSgd must be torch::optim::SGD, bit for bit on the CPU, in every option combination the
// trainer uses (the CPU results and the checkpoints of existing runs depend on it).
TEST(ForeachSgd, BitIdenticalToTorchSgd) {
  struct Case {
    double momentum, weight_decay;
    bool nesterov;
  };
  for (const Case c :
       {Case{0.9, 0.0, false}, Case{0.9, 1e-4, true}, Case{0.0, 0.01, false}, Case{0.5, 5e-4, false}}) {
    torch::manual_seed(7);
    std::vector<torch::Tensor> a, b;
    for (auto shape : {std::vector<std::int64_t>{16, 8}, {8}, {4, 3, 3, 3}}) {
      auto t = torch::randn(shape);
      a.push_back(t.clone().requires_grad_(true));
      b.push_back(t.clone().requires_grad_(true));
    }
    auto opts =
        torch::optim::SGDOptions(0.05).momentum(c.momentum).nesterov(c.nesterov).weight_decay(c.weight_decay);
    torch::optim::SGD ref(a, opts);
    torch::optim::SGD holder(b, opts);
    gridrun::runner::ForeachSgd fast(holder, b);
    for (int step = 0; step < 5; ++step) {
      const double lr = 0.05 / (1 + step);  // a schedule: lr passed per step
      for (auto& g : ref.param_groups()) g.options().set_lr(lr);
      for (std::size_t i = 0; i < a.size(); ++i) {
        auto g = torch::randn(a[i].sizes());
        a[i].mutable_grad() = g.clone();
        b[i].mutable_grad() = g.clone();
      }
      ref.step();
      fast.step(lr);
      for (std::size_t i = 0; i < a.size(); ++i)
        ASSERT_TRUE(torch::equal(a[i], b[i]))
            << "param " << i << " step " << step << " momentum " << c.momentum << " nesterov " << c.nesterov
            << " wd " << c.weight_decay;
    }
    // Momentum buffers are where torch::optim keeps them: a checkpoint of either is the same.
    EXPECT_EQ(ref.state().size(), holder.state().size());
  }
}

// The archive check must pass what LibTorch writes and stop a damaged length before LibTorch
// allocates by it (the committed fuzz input: BINUNICODE length 0x3d000003 in data.pkl).
namespace {
std::string check_pickle_error(const std::string& bytes) {
  try {
    check_pickle(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size(), "p");
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}

// check_torch_archive's message for the file, or "" when it passed.
std::string check_archive_error(const std::string& path) {
  try {
    check_torch_archive(path);
  } catch (const std::runtime_error& e) {
    return e.what();
  }
  return "";
}
}  // namespace

TEST(ArchiveCheck, PassesWhatLibTorchWrites) {
  const auto dir = std::filesystem::temp_directory_path() / ("gridrun-archive-" + std::to_string(::getpid()));
  std::filesystem::create_directories(dir);
  torch::serialize::OutputArchive a;
  a.write("w", torch::randn({17, 5}));
  a.write("s", torch::tensor({1.0, 2.0}, torch::kFloat64));
  a.save_to((dir / "a.pt").string());
  EXPECT_NO_THROW(check_torch_archive((dir / "a.pt").string()));
  std::vector<at::Tensor> v{torch::arange(10)};
  torch::save(v, (dir / "v.pt").string());
  EXPECT_NO_THROW(check_torch_archive((dir / "v.pt").string()));
  EXPECT_NO_THROW(check_torch_archive(std::string(CHECKPOINT_CORPUS) + "/seed-mlp16-state.pt"));
  std::filesystem::remove_all(dir);
}

TEST(ArchiveCheck, StopsTheHugeLengthLibTorchWouldAllocate) {
  // The fuzz input's change, alone: the length of the string "fc1" in data.pkl becomes 0x3d000003.
  std::string bytes = gridrun::base::read_file(std::string(CHECKPOINT_CORPUS) + "/seed-mlp16-state.pt",
                                               gridrun::base::kinds::kHashedInput);
  const std::string fc1(
      "X\x03\x00\x00\x00"
      "fc1",
      8);
  const auto at = bytes.find(fc1);
  ASSERT_NE(at, std::string::npos);
  bytes[at + 4] = '\x3d';
  const auto f =
      std::filesystem::temp_directory_path() / ("gridrun-len-" + std::to_string(::getpid()) + ".pt");
  { std::ofstream(f, std::ios::binary | std::ios::trunc) << bytes; }
  const std::string err = check_archive_error(f.string());
  EXPECT_NE(err.find("data.pkl"), std::string::npos)
      << "message: '" << err << "' ('' = the damaged archive passed)";
  EXPECT_NE(err.find("1023410179 bytes"), std::string::npos) << err;
  std::filesystem::remove(f);
  // The committed fuzz input itself (its tensor bytes differ too): stopped by the CRC.
  EXPECT_THROW(check_torch_archive(std::string(CHECKPOINT_CORPUS) + "/slow-torch-unpickler-readbytes.pt"),
               std::runtime_error);
}

TEST(ArchiveCheck, PickleWalk) {
  using namespace std::string_literals;
  EXPECT_EQ(check_pickle_error("\x80\x02X\x03\x00\x00\x00"
                               "abcq\x00."s),
            "");
  EXPECT_EQ(check_pickle_error("\x80\x02"
                               "cmod\nname\n)\x81r\x01\x00\x00\x00."s),
            "");
  EXPECT_NE(check_pickle_error("\x80\x02X\x03\x00\x00\x3d"
                               "abcq\x00."s)
                .find("1023410179 bytes where 6"),
            std::string::npos);
  EXPECT_NE(check_pickle_error("\x80\x02Nr\xff\xff\xff\xff."s).find("memo id 4294967295"), std::string::npos);
  EXPECT_NE(check_pickle_error("\x80\x02N"s).find("without its STOP"), std::string::npos);
  EXPECT_NE(check_pickle_error("\x80\x02\xffN."s).find("unknown pickle opcode 255 at byte 2"),
            std::string::npos);
  EXPECT_NE(check_pickle_error("\x80\x02"
                               "cmod\nname"s)
                .find("unterminated"),
            std::string::npos);
  EXPECT_NE(check_pickle_error("\x80"s).find("an argument of 1 bytes where 0"), std::string::npos);
}

TEST(ArchiveCheck, DecompressedLimit) {
  // 16 x the file's size + 64 MiB, never more than the file's size + 4 GiB (archive_check.hpp).
  constexpr std::uint64_t MiB = 1 << 20, GiB = std::uint64_t{1} << 30;
  EXPECT_EQ(archive_decompressed_limit(0), 64 * MiB);
  EXPECT_EQ(archive_decompressed_limit(1 * MiB), 80 * MiB);  // the 1 MB file: not 1 GiB
  EXPECT_EQ(archive_decompressed_limit(100 * MiB), 1664 * MiB);
  EXPECT_EQ(archive_decompressed_limit(1 * GiB), 5 * GiB);
  EXPECT_EQ(archive_decompressed_limit(~std::uint64_t{0} / 2), ~std::uint64_t{0} / 2 + 4 * GiB);
}

TEST(ArchiveCheck, NotAZip) {
  const auto f = std::filesystem::temp_directory_path() / ("gridrun-notzip-" + std::to_string(::getpid()));
  { std::ofstream(f) << std::string(100, 'x'); }
  EXPECT_THROW(check_torch_archive(f.string()), std::runtime_error);
  std::filesystem::remove(f);
}

TEST(ArchiveCheck, ChangedTensorBytesFailTheCrc) {
  // A flipped byte inside tensor data: LibTorch would load it as a different weight.
  const auto f =
      std::filesystem::temp_directory_path() / ("gridrun-crc-" + std::to_string(::getpid()) + ".pt");
  torch::serialize::OutputArchive a;
  a.write("w", torch::zeros({64}));
  a.save_to(f.string());
  ASSERT_NO_THROW(check_torch_archive(f.string()));
  std::string bytes = gridrun::base::read_file(f.string(), gridrun::base::kinds::kHashedInput);
  const std::string zeros(64 * 4, '\0');
  const auto at = bytes.find(zeros);
  ASSERT_NE(at, std::string::npos);
  bytes[at + 17] = '\x3f';
  { std::ofstream(f, std::ios::binary | std::ios::trunc) << bytes; }
  const std::string err = check_archive_error(f.string());
  EXPECT_NE(err.find("CRC-32"), std::string::npos)
      << "message: '" << err << "' ('' = changed tensor bytes passed)";
  std::filesystem::remove(f);
}
