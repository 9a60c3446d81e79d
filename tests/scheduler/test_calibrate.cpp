// Calibration and calibrated prediction (scheduler/calibrate.hpp): a job's predicted seconds from
// its configuration's figures, which parameters make a configuration, the calibration file, and
// `gridrun simulate --format json` predicting a compare-by grid from a calibration written here
// (alone figures for one-after-another jobs, a side-by-side group's figures for jobs that share
// the machine, the cost model for a configuration that was not calibrated).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <vector>

#include "executor.hpp"
#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/host.hpp"
#include "gridrun/base/json.hpp"
#include "gridrun/jobs/grid.hpp"
#include "gridrun/results/writer.hpp"
#include "gridrun/run/prediction.hpp"
#include "gridrun/run/run_dir.hpp"
#include "gridrun/scheduler/calibrate.hpp"
#include "gridrun/scheduler/placement.hpp"
#include "gridrun/scheduler/run_grid.hpp"

namespace fs = std::filesystem;
using namespace gridrun;
using namespace gridrun::scheduler;

namespace {

StepFigures figs(double launch, double step) {
  StepFigures f;
  f.launch_s = launch;
  f.warm_s = 5 * 2 * step;  // the warm-up steps take twice as long
  f.warm_steps = 5;
  f.step_s = step;
  f.eval_s = 0.5;
  f.checkpoint_s = 0.2;
  f.tail_s = 0.1;
  f.steps_per_epoch = 10;
  return f;
}

struct TempDir {
  fs::path path;
  TempDir() {
    char tmpl[] = "/tmp/gridrun-calib-XXXXXX";
    path = ::mkdtemp(tmpl);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

TEST(Calibrate, PredictSecondsAddsLaunchStepsEvaluationsAndCheckpoints) {
  jobs::JobParams p;
  p.epochs = 3;
  p.eval_every = 1;
  // 30 steps: 5 warm (1.0 s) + 25 x 0.1 s; 3 evaluations, 3 checkpoints; launch 1 s, tail 0.1 s.
  EXPECT_NEAR(predict_seconds(p, figs(1.0, 0.1)), 1.0 + 1.0 + 2.5 + 1.5 + 0.6 + 0.1, 1e-9);
  p.max_steps = 15;  // 2 epochs (the second partial), both evaluated: every run ends with one
  EXPECT_NEAR(predict_seconds(p, figs(1.0, 0.1)), 1.0 + 1.0 + 1.0 + 1.0 + 0.4 + 0.1, 1e-9);
  p.max_steps = 0;
  p.epochs = 4;
  p.eval_every = 2;  // evaluations after epochs 2 and 4
  EXPECT_NEAR(predict_seconds(p, figs(1.0, 0.1)), 1.0 + 1.0 + 3.5 + 1.0 + 0.8 + 0.1, 1e-9);
  p.epochs = 1;
  p.max_steps = 3;  // fewer steps than the warm-up: a share of the warm-up time
  EXPECT_NEAR(predict_seconds(p, figs(1.0, 0.1)), 1.0 + 0.6 + 0.5 + 0.2 + 0.1, 1e-9);
  // A target the calibration job already reached after 8 steps: the job stops at its first
  // evaluation after 8 steps (epoch 1 of 3); with another learning rate nothing is assumed.
  p = jobs::JobParams{};
  p.epochs = 3;
  p.target_accuracy = 0.6;
  StepFigures f = figs(1.0, 0.1);
  f.final_acc = 0.7;
  f.acc_steps = 8;
  f.learn_key = learn_key(p);
  EXPECT_NEAR(predict_seconds(p, f), 1.0 + 1.0 + 0.5 + 0.5 + 0.2 + 0.1, 1e-9);
  p.lr = 0.5;
  EXPECT_NEAR(predict_seconds(p, f), 1.0 + 1.0 + 2.5 + 1.5 + 0.6 + 0.1, 1e-9);
  p.lr = jobs::JobParams{}.lr;
  p.target_accuracy = 0.8;  // not reached by the calibration
  EXPECT_NEAR(predict_seconds(p, f), 1.0 + 1.0 + 2.5 + 1.5 + 0.6 + 0.1, 1e-9);
}

// A real job file whose steady steps are 18 of 10 ms and 2 preempted ones of 100 ms: alone the
// median (10 ms), side by side the mean (19 ms, what the steps sum to).
TEST(Calibrate, FiguresTakeTheMedianAloneAndTheMeanSideBySide) {
  TempDir dir;
  results::JobFileInfo info;
  info.id = "spiky";
  info.run = "calibration";
  info.params.timing_warmup_steps = 2;
  info.int_attrs["steps_per_epoch"] = 22;
  info.flush_interval_s = 0;
  auto w = results::JobWriter::create(dir.path.string(), info);
  double all = 0;
  for (int k = 0; k < 22; ++k) {
    results::StepRow r;
    r.step = k;
    r.step_s = k < 2 ? 0.05 : (k == 9 || k == 17) ? 0.1 : 0.01;
    r.rank_step_s = {r.step_s};
    all += r.step_s;
    r.wall_s = all;
    w->append_step(r);
  }
  w->finish(results::Status::Completed, "",
            {{"launched_unix", 1000.0},
             {"first_step_unix", 1001.5},
             {"finished_unix", 1001.5 + all},
             {"time_train_s", all}});
  const std::string file = w->path();
  w.reset();
  BuildVersions v;
  std::string why;
  const auto alone = figures_from_file(file, FigureOptions{2, 1002.0 + all, false}, v, why);
  ASSERT_TRUE(alone) << why;
  EXPECT_NEAR(alone->step_s, 0.01, 1e-9);
  EXPECT_NEAR(alone->warm_s, 0.1, 1e-9);
  EXPECT_EQ(alone->warm_steps, 2);
  EXPECT_NEAR(alone->launch_s, 1.5, 1e-6);
  EXPECT_NEAR(alone->tail_s, 0.5, 1e-6);
  EXPECT_EQ(alone->steps_per_epoch, 22);
  const auto side = figures_from_file(file, FigureOptions{2, std::nan(""), true}, v, why);
  ASSERT_TRUE(side) << why;
  EXPECT_NEAR(side->step_s, 0.019, 1e-9);
  EXPECT_EQ(side->tail_s, 0);
}

TEST(Calibrate, ConfigKeyIgnoresWhatIsLearnedAndForHowLong) {
  jobs::JobParams a;
  a.model = "lenet";
  a.ranks = 2;
  a.batch_per_rank = 32;
  jobs::JobParams b = a;
  b.lr = 0.01;
  b.seed = 7;
  b.epochs = 9;
  b.max_steps = 100;
  b.target_accuracy = 0.5;
  b.optimizer = a.optimizer;
  EXPECT_EQ(config_key(a), config_key(b));
  for (auto change :
       {+[](jobs::JobParams& p) { p.ranks = 1; }, +[](jobs::JobParams& p) { p.batch_per_rank = 64; },
        +[](jobs::JobParams& p) { p.model = "mlp"; }, +[](jobs::JobParams& p) { p.threads_per_rank = 2; },
        +[](jobs::JobParams& p) { p.train_samples = 4096; }}) {
    jobs::JobParams c = a;
    change(c);
    EXPECT_NE(config_key(a), config_key(c));
  }
  EXPECT_EQ(config_label(a), "lenet cpu ranks=2 bpr=32");
}

TEST(Calibrate, FileRoundTrip) {
  TempDir d;
  Calibration c;
  c.host = "h";
  c.train_bin = "/x/gridrun-train";
  c.build = "123-456";
  c.versions.torch = "1.13.0";
  c.created = "2026-11-26T00:00:00Z";
  c.cost_s = 12.5;
  c.alone["k1"] = figs(0.8, 0.004);
  c.labels["k1"] = "mlp cpu ranks=1 bpr=64";
  CalibrationGroup g;
  g.members = {"k1", "k1"};
  g.figures["k1"] = figs(0.9, 0.005);
  c.groups.push_back(g);
  const std::string path = (d.path / "calibration.json").string();
  write_calibration(path, c);
  const Calibration r = read_calibration(path);
  EXPECT_EQ(r.host, "h");
  EXPECT_EQ(r.build, "123-456");
  EXPECT_DOUBLE_EQ(r.cost_s, 12.5);
  ASSERT_EQ(r.alone.count("k1"), 1u);
  EXPECT_DOUBLE_EQ(r.alone.at("k1").step_s, 0.004);
  EXPECT_EQ(r.alone.at("k1").steps_per_epoch, 10);
  EXPECT_EQ(r.labels.at("k1"), "mlp cpu ranks=1 bpr=64");
  ASSERT_EQ(r.groups.size(), 1u);
  EXPECT_EQ(r.groups[0].members, g.members);
  EXPECT_DOUBLE_EQ(r.groups[0].figures.at("k1").launch_s, 0.9);
  std::ofstream(path) << "{\"format\":\"something else\"}";
  EXPECT_THROW(read_calibration(path), std::runtime_error);
}

// Issue 58: the load a calibration was measured under travels with it, is said beside every
// prediction, and a damaged record of it reads as "not recorded", never as quiet.
TEST(Calibrate, ConditionsRoundTripAndAreSaid) {
  TempDir d;
  Calibration c;
  c.host = "h";
  c.build = "1-2";
  c.created = "2026-11-28T15:02:11Z";
  c.alone["k1"] = figs(0.8, 0.004);
  c.alone["k1"].other_cpu_share = 0.03;
  c.conditions.max_other_cpu_share = 0.03;
  c.conditions.repeated = 1;
  const std::string path = (d.path / "calibration.json").string();
  write_calibration(path, c);
  Calibration r = read_calibration(path);
  EXPECT_TRUE(r.warnings.empty());
  EXPECT_DOUBLE_EQ(r.alone.at("k1").other_cpu_share, 0.03);
  EXPECT_DOUBLE_EQ(r.conditions.max_other_cpu_share, 0.03);
  EXPECT_EQ(r.conditions.repeated, 1);
  EXPECT_FALSE(r.conditions.accepted_load);
  EXPECT_EQ(describe_conditions(r),
            "calibrated on h 2026-11-28 15:02 UTC, other processes took at most 3 % of the CPU (1 disturbed "
            "measurement(s) taken again)");
  c.conditions = CalibrationConditions{0.43, 0, true};
  write_calibration(path, c);
  r = read_calibration(path);
  EXPECT_TRUE(r.conditions.accepted_load);
  EXPECT_EQ(
      describe_conditions(r),
      "calibrated on h 2026-11-28 15:02 UTC, WARNING: other processes took up to 43 % of the CPU while it "
      "measured (kept with --accept-load): its times are likely too long, and so is this prediction; "
      "calibrate again on a quiet machine");
  // A file from before the conditions were recorded, and one whose record is damaged.
  base::Json j = base::read_json_file(path, base::kinds::kCalibration);
  j.erase("checksum");
  j.erase("conditions");
  std::ofstream(path) << j.dump(1);
  r = read_calibration(path);
  EXPECT_TRUE(std::isnan(r.conditions.max_other_cpu_share));
  EXPECT_NE(describe_conditions(r).find("load not recorded"), std::string::npos) << describe_conditions(r);
  j["conditions"] = {{"max_other_cpu_share", 7}, {"repeated", 0}, {"accepted_load", false}};
  std::ofstream(path) << j.dump(1);
  r = read_calibration(path);
  ASSERT_EQ(r.warnings.size(), 1u);
  EXPECT_NE(r.warnings[0].find("conditions.max_other_cpu_share: 7 is not in 0 .. 1"), std::string::npos)
      << r.warnings[0];
  EXPECT_TRUE(std::isnan(r.conditions.max_other_cpu_share));
}

// The grid of examples/large-vs-small-cpu.yaml on 2 cores: ranks=2 jobs one after another (alone
// figures), ranks=1 jobs side by side (the group's figures); prediction.json written beside.
TEST(Calibrate, SimulatePredictsPhasesFromTheCalibration) {
  TempDir d;
  const std::string grid = (d.path / "g.yaml").string();
  std::ofstream(grid) << "name: g\ncompare: {by: ranks}\ndefaults: {dataset: synthetic, epochs: 2, "
                         "train_samples: 1024, test_samples: 256, global_batch: 64}\n"
                         "grid:\n  model: [mlp, lenet]\n  ranks: [2, 1]\n";
  const jobs::Expansion ex = jobs::load_grid(grid);
  ASSERT_EQ(ex.jobs.size(), 4u);
  Calibration c;
  c.host = base::hostname();
  c.train_bin = "/bin/true";
  c.build = build_fingerprint("/bin/true");
  std::map<std::string, const jobs::JobParams*> by_key;
  for (const auto& j : ex.jobs) by_key[config_key(j.params)] = &j.params;
  std::vector<std::string> small;
  for (const auto& [key, p] : by_key) {
    c.alone[key] = figs(1.0, p->ranks == 2 ? 0.05 : 0.08);
    if (p->ranks == 1) small.push_back(key);
  }
  CalibrationGroup g;
  g.members = small;
  std::sort(g.members.begin(), g.members.end());
  for (const auto& k : small) g.figures[k] = figs(1.5, 0.1);  // slower side by side
  c.groups.push_back(g);
  const std::string out = (d.path / "runs").string();
  fs::create_directories(out + "/g");
  write_calibration(run::RunDir(out + "/g").calibration_file(), c);

  RunOptions o;
  o.grid = grid;
  o.out = out;
  o.simulate = true;
  o.format = "json";
  o.train_bin = "/bin/true";
  o.resources.cores = 2;
  std::ostringstream text;
  run_grid(o, text);
  const base::Json j = base::parse_json(text.str(), "simulate output");
  // Each job: 2 epochs x 16 steps (1024 / 64 per step); the figures say 10 steps per epoch, so
  // ceil(32 / 10) = 4 epochs' evaluations and checkpoints.
  jobs::JobParams p = ex.jobs[0].params;
  const double large = predict_seconds(p, figs(1.0, 0.05));
  const double small_side = predict_seconds(p, figs(1.5, 0.1));
  EXPECT_NEAR(j["phases"]["2"]["makespan_s"].get<double>(), 2 * large, 1e-3);
  EXPECT_EQ(j["phases"]["2"]["arrangement"], "2 jobs x 2 ranks, one after another");
  EXPECT_NEAR(j["phases"]["1"]["makespan_s"].get<double>(), small_side, 1e-3);
  EXPECT_EQ(j["phases"]["1"]["arrangement"], "2 jobs x 1 rank, side by side");
  EXPECT_NE(j["durations"].get<std::string>().find("2 alone, 2 side by side"), std::string::npos)
      << j["durations"];
  const run::Prediction rec = run::read_prediction(run::RunDir(out + "/g").prediction_file());
  EXPECT_EQ(rec.source, "calibration");
  EXPECT_NEAR(rec.phases.at("1").makespan_s, small_side, 1e-3);
  EXPECT_EQ(rec.phases.at("1").max_running, 2);

  // Another build of gridrun-train: the calibration is not used, and the output says why.
  o.format = "table";
  o.train_bin = (d.path / "another-gridrun-train").string();
  std::ofstream(o.train_bin) << "#!/bin/sh\n";
  std::ostringstream other;
  run_grid(o, other);
  EXPECT_NE(other.str().find("calibration not used"), std::string::npos) << other.str();
  EXPECT_NE(other.str().find("uncalibrated"), std::string::npos) << other.str();
}

// Issue 45: calibration.json is checked completely when read. A bad entry (a figure missing, not a
// number, negative, absurdly large) is left out with one warning naming the file and the key, so
// its configuration falls back to the cost model; only a file that cannot say whose it is goes.
TEST(Calibrate, DamagedEntriesAreLeftOutWithOneWarningEach) {
  TempDir d;
  Calibration c;
  c.host = "h";
  c.build = "1-2";
  c.cost_s = 3;
  for (const char* k : {"good", "no_step", "text_step", "negative_step", "huge_step", "negative_launch",
                        "null_step", "bad_acc", "zero_spe"})
    c.alone[k] = figs(0.8, 0.004);
  CalibrationGroup g;
  g.members = {"good", "good"};
  g.figures["good"] = figs(0.9, 0.005);
  c.groups.push_back(g);
  c.groups.push_back(g);
  const std::string path = (d.path / "calibration.json").string();
  write_calibration(path, c);
  base::Json j = base::read_json_file(path, base::kinds::kCalibration);
  {
    // An edit that keeps the file's checksum is a damaged file as a whole (base/json_checked.hpp);
    // the message says to delete the checksum line, which the edits below then do.
    base::Json edited = j;
    edited["cost_s"] = 2;
    std::ofstream(path) << edited.dump(1);
    try {
      read_calibration(path);
      ADD_FAILURE() << "an edited calibration.json with its old checksum was read";
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find("delete its \"checksum\" line"), std::string::npos) << e.what();
    }
  }
  j.erase("checksum");
  j["configs"]["no_step"].erase("step_s");
  j["configs"]["text_step"]["step_s"] = "0.004";
  j["configs"]["negative_step"]["step_s"] = -1;
  j["configs"]["huge_step"]["step_s"] = 1e300;
  j["configs"]["negative_launch"]["launch_s"] = -1e9;
  j["configs"]["null_step"]["step_s"] = nullptr;
  j["configs"]["bad_acc"]["final_acc"] = 7;
  j["configs"]["zero_spe"]["steps_per_epoch"] = 0;
  j["groups"][1]["figures"]["good"].erase("launch_s");
  j["cost_s"] = "a while";
  std::ofstream(path) << j.dump(1);
  const Calibration r = read_calibration(path);
  EXPECT_EQ(r.alone.size(), 1u);
  EXPECT_EQ(r.alone.count("good"), 1u);
  ASSERT_EQ(r.groups.size(), 1u);  // the damaged group is left out, the good one kept
  EXPECT_EQ(r.cost_s, 0);
  ASSERT_EQ(r.warnings.size(), 10u);
  auto warned = [&](const std::string& text) {
    for (const auto& w : r.warnings)
      if (w.find(text) != std::string::npos && w.rfind(path, 0) == 0) return true;
    return false;
  };
  EXPECT_TRUE(warned(": configs.no_step.step_s: missing; that configuration is uncalibrated"));
  EXPECT_TRUE(warned(": configs.text_step.step_s: not a number (\"0.004\")"));
  EXPECT_TRUE(warned(": configs.negative_step.step_s: -1 s is outside 0 .. 1000000 s"));
  EXPECT_TRUE(warned(": configs.huge_step.step_s: 1e+300 s is outside"));
  EXPECT_TRUE(warned(": configs.negative_launch.launch_s: -1000000000.0 s is outside"));
  EXPECT_TRUE(warned(": configs.null_step.step_s: missing"));
  EXPECT_TRUE(warned(": configs.bad_acc.final_acc: 7 is not in 0 .. 1"));
  EXPECT_TRUE(warned(": configs.zero_spe.steps_per_epoch: 0 is not a whole number in 1 .. "));
  EXPECT_TRUE(warned(": groups[1].figures.good.launch_s: missing; that group is ignored"));
  EXPECT_TRUE(warned(": cost_s: not a number (\"a while\"); ignored"));
  for (const auto& w : r.warnings) EXPECT_EQ(w.find('\n'), std::string::npos) << w;

  // What says whose calibration it is must be text, or the whole file is not used.
  j = base::read_json_file(path, base::kinds::kCalibration);
  j["host"] = 7;
  std::ofstream(path) << j.dump(1);
  EXPECT_THROW(read_calibration(path), std::runtime_error);
  j["host"] = "h";
  j["configs"] = base::Json::array();
  std::ofstream(path) << j.dump(1);
  try {
    read_calibration(path);
    ADD_FAILURE() << "configs as an array was read";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": configs: expected an object"), std::string::npos)
        << e.what();
  }
}

// Whatever the job asks for, a prediction from valid figures is finite and in the engine's range
// (epochs x steps per epoch saturates instead of wrapping).
TEST(Calibrate, PredictSecondsIsFiniteForHugeJobs) {
  jobs::JobParams p;
  p.epochs = std::numeric_limits<std::int64_t>::max();
  p.eval_every = 1;
  StepFigures f = figs(kMaxCalibratedSeconds, kMaxCalibratedSeconds);
  f.steps_per_epoch = kMaxCalibratedCount;
  const double s = predict_seconds(p, f);
  EXPECT_TRUE(std::isfinite(s));
  EXPECT_EQ(s, kMaxEngineSeconds);
  p.epochs = 0;
  p.max_steps = std::numeric_limits<std::int64_t>::max();
  p.target_accuracy = 0.5;
  f.final_acc = 0.9;
  f.acc_steps = kMaxCalibratedCount;
  f.learn_key = learn_key(p);
  EXPECT_TRUE(std::isfinite(predict_seconds(p, f)));
  EXPECT_GE(predict_seconds(p, f), 0);
}

// The hang of issue 45, in process: `simulate` on a run whose calibration.json lacks one
// configuration's step_s ends, warns naming the file and key, and predicts that configuration
// from the cost model. (tests/scheduler/e2e_calibration.py runs the real binary under a timeout.)
TEST(Calibrate, SimulateWithADamagedCalibrationWarnsAndEnds) {
  TempDir d;
  const std::string grid = (d.path / "g.yaml").string();
  std::ofstream(grid) << "name: g\ndefaults: {dataset: synthetic, epochs: 2, train_samples: 1024, "
                         "test_samples: 256, global_batch: 64}\ngrid:\n  model: [mlp, lenet]\n";
  const jobs::Expansion ex = jobs::load_grid(grid);
  Calibration c;
  c.host = base::hostname();
  c.train_bin = "/bin/true";
  c.build = build_fingerprint("/bin/true");
  for (const auto& job : ex.jobs) c.alone[config_key(job.params)] = figs(1.0, 0.05);
  const std::string out = (d.path / "runs").string();
  fs::create_directories(out + "/g");
  const std::string path = run::RunDir(out + "/g").calibration_file();
  write_calibration(path, c);
  base::Json j = base::read_json_file(path, base::kinds::kCalibration);
  j.erase("checksum");  // edited by hand, as docs/architecture.md says: without its checksum
  const std::string damaged = config_key(ex.jobs[1].params);
  j["configs"][damaged].erase("step_s");
  std::ofstream(path) << j.dump(1);

  RunOptions o;
  o.grid = grid;
  o.out = out;
  o.simulate = true;
  o.train_bin = "/bin/true";
  o.resources.cores = 2;
  std::ostringstream text;
  run_grid(o, text);
  EXPECT_NE(text.str().find("warning: " + path + ": configs." + damaged + ".step_s: missing"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("1 alone, 0 side by side, 1 from the cost model"), std::string::npos)
      << text.str();
  EXPECT_EQ(text.str().find("makespan ?"), std::string::npos) << text.str();
  const run::Prediction rec = run::read_prediction(run::RunDir(out + "/g").prediction_file());
  EXPECT_TRUE(rec.warnings.empty());
  EXPECT_TRUE(std::isfinite(rec.makespan_s));
}

// prediction.json is checked completely too (issue 45): a bad figure is left out with one warning
// naming the file and key (a renamed key used to drop "(predicted ...)" without a word), and a
// file whose text fields or sections have the wrong type is not used at all.
TEST(Calibrate, DamagedPredictionEntriesAreLeftOutWithOneWarningEach) {
  TempDir d;
  run::Prediction p;
  p.source = "calibration";
  p.policy = "packed";
  p.makespan_s = 10;
  p.phase_order = {"1", "2", "3", "4"};
  for (const auto& name : p.phase_order) p.phases[name] = run::PhasePrediction{5, 2, 2};
  p.job_seconds = {{"a", 1}, {"b", 2}, {"c", 3}};
  const std::string path = (d.path / "prediction.json").string();
  run::write_prediction(path, p);
  base::Json j = base::read_json_file(path, base::kinds::kCalibration);
  j.erase("checksum");  // edited by hand: without its checksum, or the whole file is damaged
  j["phases"]["1"]["makespan"] = j["phases"]["1"]["makespan_s"];  // renamed
  j["phases"]["1"].erase("makespan_s");
  j["phases"]["2"]["makespan_s"] = -3;
  j["phases"]["3"]["max_running"] = 3;  // more than its 2 jobs
  j["jobs"]["b"] = "2";
  j["jobs"]["c"] = 1e300;
  j["makespan_s"] = nullptr;
  std::ofstream(path) << j.dump(1);
  const run::Prediction r = run::read_prediction(path);
  EXPECT_EQ(r.phase_order, std::vector<std::string>{"4"});
  EXPECT_EQ(r.job_seconds.size(), 1u);
  EXPECT_TRUE(std::isnan(r.makespan_s));
  ASSERT_EQ(r.warnings.size(), 6u);
  auto warned = [&](const std::string& text) {
    for (const auto& w : r.warnings)
      if (w.rfind(path + ": " + text, 0) == 0) return true;
    return false;
  };
  EXPECT_TRUE(warned("makespan_s: not a number (null); no predicted makespan"));
  EXPECT_TRUE(warned("phases.1.makespan_s: missing; that phase has no prediction"));
  EXPECT_TRUE(warned("phases.2.makespan_s: -3 s is outside"));
  EXPECT_TRUE(warned("phases.3.max_running: 3 is not a whole number in 0 .. 2"));
  EXPECT_TRUE(warned("jobs.b: not a number (\"2\"); that job has no prediction"));
  EXPECT_TRUE(warned("jobs.c: 1e+300 s is outside"));
  j["source"] = 1;
  std::ofstream(path) << j.dump(1);
  EXPECT_THROW(run::read_prediction(path), std::runtime_error);
  j["source"] = "calibration";
  j["phases"] = base::Json::array();
  std::ofstream(path) << j.dump(1);
  EXPECT_THROW(run::read_prediction(path), std::runtime_error);
}

// Issue 44, point 7: the configurations of one launch key (device, ranks, threads, nodes) are
// measured alone in one process, one launch for all of them; another device, rank or thread count
// is another process. The local executor passes the chained job files as --then-job.
TEST(Calibrate, AloneConfigurationsShareOneLaunchPerLaunchKey) {
  TempDir d;
  const std::string grid = (d.path / "g.yaml").string();
  std::ofstream(grid) << "name: g\ndefaults: {dataset: synthetic, epochs: 1, train_samples: 1024}\n"
                         "grid:\n  model: [mlp, lenet, transformer]\n  ranks: [2, 1]\n";
  const jobs::Expansion ex = jobs::load_grid(grid);
  std::vector<jobs::JobParams> configs;
  for (const auto& j : ex.jobs) configs.push_back(j.params);
  const auto procs = plan_alone_processes(configs);
  ASSERT_EQ(procs.size(), 2u);  // ranks=2 and ranks=1: 6 configurations, 2 launches
  for (const auto& proc : procs) {
    EXPECT_EQ(proc.size(), 3u);
    for (std::size_t k : proc) EXPECT_EQ(configs[k].ranks, configs[proc[0]].ranks);
  }
  EXPECT_EQ(procs[0][0], 0u);  // in grid order: the first job's key first, launched first
  // Threads, device or nodes make another launch key.
  jobs::JobParams a = configs[0], b = a, c = a, e = a;
  b.threads_per_rank = 2;
  c.device = jobs::Device::gpu;
  e.nodes = 2;
  EXPECT_EQ(plan_alone_processes({a, b, c, e, a}).size(), 4u);
  EXPECT_EQ(plan_alone_processes({a, b, c, e, a})[0], (std::vector<std::size_t>{0, 4}));

  LaunchSpec s;
  s.req.ranks = 2;
  s.job_file = "/r/jobs/a.json";
  s.results_dir = "/r/results";
  s.train_bin = "gridrun-train";
  s.then_job_files = {"/r/jobs/b.json", "/r/jobs/c.json"};
  const auto cmd = make_executor("local")->command(s);
  std::string line;
  for (const auto& w : cmd) line += w + " ";
  EXPECT_NE(
      line.find("--job /r/jobs/a.json --out /r/results --then-job /r/jobs/b.json --then-job /r/jobs/c.json"),
      std::string::npos)
      << line;
}

// A job chained before others has no exit of its own: it takes the process's tail (its last
// job's), and its launch is what its file says (gridrun-train moves launched_at on by the earlier
// jobs, so first step - launched is the process's launch plus its own set-up).
TEST(Calibrate, AChainedJobTakesTheTailOfItsProcess) {
  TempDir dir;
  results::JobFileInfo info;
  info.id = "chained";
  info.run = "calibration";
  info.params.timing_warmup_steps = 1;
  info.int_attrs["steps_per_epoch"] = 4;
  info.flush_interval_s = 0;
  auto w = results::JobWriter::create(dir.path.string(), info);
  for (int k = 0; k < 4; ++k) {
    results::StepRow r;
    r.step = k;
    r.step_s = 0.01;
    r.rank_step_s = {r.step_s};
    r.wall_s = 0.01 * (k + 1);
    w->append_step(r);
  }
  w->finish(results::Status::Completed, "",
            {{"launched_unix", 1000.0},
             {"first_step_unix", 1000.8},
             {"finished_unix", 1000.84},
             {"time_train_s", 0.04}});
  const std::string file = w->path();
  w.reset();
  BuildVersions v;
  std::string why;
  FigureOptions fo{1, 2000.0, false};  // the process ended long after: other jobs ran after this one
  fo.tail_s = 0.25;
  const auto f = figures_from_file(file, fo, v, why);
  ASSERT_TRUE(f) << why;
  EXPECT_NEAR(f->tail_s, 0.25, 1e-9);
  EXPECT_NEAR(f->launch_s, 0.8, 1e-6);
}

// A configuration never steps longer than its longest job: the job itself shows no more; at least
// 3 timed steps; no cap when the data set's size decides the steps.
TEST(Calibrate, CalibrationStepsNeverExceedTheLongestJob) {
  jobs::JobParams p;
  p.epochs = 1;
  p.train_samples = 256;
  p.batch_per_rank = 16;
  p.ranks = 2;
  EXPECT_EQ(known_steps(p), 8);  // floor(256 / 32)
  p.max_steps = 5;
  EXPECT_EQ(known_steps(p), 5);
  p.max_steps = 0;
  p.epochs = 3;
  p.train_samples = 100;  // floor(100 / 32) = 3 per epoch
  EXPECT_EQ(known_steps(p), 9);
  p.train_samples = 0;
  EXPECT_EQ(known_steps(p), 0);
  p.epochs = 0;
  p.max_steps = 40;
  EXPECT_EQ(known_steps(p), 40);

  EXPECT_EQ(capped_steps(20, 8, 5), 3);      // 8-step jobs: 5 warm-up + 3 timed
  EXPECT_EQ(capped_steps(20, 15, 5), 10);    // the job's own 10 after its warm-up
  EXPECT_EQ(capped_steps(20, 1000, 5), 20);  // long jobs: --steps
  EXPECT_EQ(capped_steps(20, 0, 5), 20);     // unknown: --steps
}

// Issue 44: a grid that costs less to run than to predict is named, once, in plain words, by
// calibrate (short_grid_note) and by simulate when it predicts from that calibration.
TEST(Calibrate, AGridCheaperToRunThanToPredictIsNamed) {
  EXPECT_EQ(short_grid_note(10, 60, "g.yaml"), "");
  EXPECT_EQ(short_grid_note(0, 60, "g.yaml"), "");
  EXPECT_EQ(short_grid_note(7, 3, "g.yaml"),
            "note: this grid is so short that running it (predicted 3s) costs less than predicting it "
            "(calibration 7s): run it (`gridrun run g.yaml`) instead of calibrating it");

  TempDir d;
  const std::string grid = (d.path / "g.yaml").string();
  std::ofstream(grid) << "name: g\ndefaults: {dataset: synthetic, epochs: 1, train_samples: 1024, "
                         "test_samples: 256, global_batch: 64}\ngrid:\n  model: [mlp, lenet]\n";
  const jobs::Expansion ex = jobs::load_grid(grid);
  Calibration c;
  c.host = base::hostname();
  c.train_bin = "/bin/true";
  c.build = build_fingerprint("/bin/true");
  for (const auto& job : ex.jobs) c.alone[config_key(job.params)] = figs(1.0, 0.05);
  const std::string out = (d.path / "runs").string();
  fs::create_directories(out + "/g");
  RunOptions o;
  o.grid = grid;
  o.out = out;
  o.simulate = true;
  o.train_bin = "/bin/true";
  o.resources.cores = 2;
  for (const double cost : {1.0, 1000.0}) {
    c.cost_s = cost;
    write_calibration(run::RunDir(out + "/g").calibration_file(), c);
    std::ostringstream text;
    run_grid(o, text);
    EXPECT_EQ(text.str().find("costs less than predicting it") != std::string::npos, cost > 1) << cost << "\n"
                                                                                               << text.str();
  }
}
