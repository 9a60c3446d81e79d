// collect + report on a synthetic run written with the real writer; report outputs are compared
// with golden files in tests/report/golden/ (on mismatch the actual output is written next to
// the test binary as <name>.actual for diffing).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gridrun/report/collect.hpp"
#include "gridrun/report/phases.hpp"
#include "gridrun/report/reporter.hpp"
#include "synthetic.hpp"
#include "test_util.hpp"

using namespace gridrun::results;
using namespace gridrun::report;
using gridrun::results::testing::TempDir;
namespace fs = std::filesystem;

namespace {

class SyntheticRun : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    run_ = dir_->path() + "/synthetic";
    gridrun::results::testing::make_synthetic_run(run_);
  }
  static void TearDownTestSuite() { delete dir_; }
  static TempDir* dir_;
  static std::string run_;

  std::string report(const std::string& input, const std::string& format,
                     std::vector<std::pair<std::string, std::string>> filters = {},
                     const std::string& group_by = "") {
    ReportOptions o;
    o.input = input;
    o.format = format;
    o.filters = filters;
    o.group_by = group_by;
    std::ostringstream out, log;
    write_report(o, *make_reporter(format), out, log);
    return out.str();
  }

  void expect_golden(const std::string& actual, const std::string& name) {
    std::string golden = gridrun::results::testing::read_file(std::string(GOLDEN_DIR) + "/" + name);
    if (actual != golden) std::ofstream(name + ".actual") << actual;
    EXPECT_EQ(actual, golden) << "golden " << name << " differs; see " << fs::absolute(name + ".actual");
  }
};

TempDir* SyntheticRun::dir_ = nullptr;
std::string SyntheticRun::run_;

}  // namespace

TEST_F(SyntheticRun, CollectIndexesAndSkipsCorruptByName) {
  std::ostringstream log;
  CollectResult r = collect(CollectOptions{run_, false}, log);
  EXPECT_EQ(r.jobs, 10u);  // 8 finished + failed + unfinished .partial
  EXPECT_TRUE(fs::exists(run_ + "/results.h5"));
  EXPECT_NE(log.str().find("corrupt000000.h5"), std::string::npos) << log.str();
  EXPECT_NE(log.str().find("missing000000.h5: missing"), std::string::npos) << log.str();
  ASSERT_EQ(r.skipped.size(), 2u);
  auto jobs = read_index(r.index_path);
  ASSERT_EQ(jobs.size(), 10u);
  EXPECT_EQ(jobs[0].id, "cpu-r1-s0");
  EXPECT_EQ(jobs[0].status, "completed");
  EXPECT_EQ(jobs[0].file, "results/cpu-r1-s0.h5");
  ASSERT_TRUE(jobs[0].params.has_value());  // typed, as the job file holds them
  EXPECT_EQ(jobs[0].params->device, gridrun::jobs::Device::cpu);
  EXPECT_EQ(jobs[0].params->ranks, 1);
  EXPECT_EQ(jobs[0].params->overlap, true);
  EXPECT_DOUBLE_EQ(jobs[0].summary.at("flops_per_s"), 1e9);
  bool saw_partial = false;
  for (const auto& j : jobs)
    if (j.id == "cpu-r4-s2") {
      saw_partial = true;
      EXPECT_EQ(j.status, "running");
      EXPECT_EQ(j.file, "results/cpu-r4-s2.h5.partial");
      EXPECT_EQ(j.summary.at("steps_done"), 20);  // derived from its flushed rows
    }
  EXPECT_TRUE(saw_partial);
  // Idempotent: a second collect gives the same table.
  std::ostringstream log2;
  collect(CollectOptions{run_, true}, log2);
  auto again = read_index(r.index_path);
  ASSERT_EQ(again.size(), jobs.size());
  for (std::size_t k = 0; k < jobs.size(); ++k) EXPECT_EQ(again[k].id, jobs[k].id);
  EXPECT_FALSE(fs::exists(run_ + "/results.h5.tmp-" + std::to_string(getpid())));
}

TEST_F(SyntheticRun, CollectRejectsNonRunDir) {
  std::ostringstream log;
  EXPECT_THROW(collect(CollectOptions{dir_->path() + "/nope", false}, log), std::invalid_argument);
}

TEST_F(SyntheticRun, GoldenTable) { expect_golden(report(run_, "table"), "report.txt"); }
TEST_F(SyntheticRun, GoldenMarkdown) { expect_golden(report(run_, "markdown"), "report.md"); }
TEST_F(SyntheticRun, GoldenCsv) { expect_golden(report(run_, "csv"), "report.csv"); }
TEST_F(SyntheticRun, GoldenJson) { expect_golden(report(run_, "json"), "report.json"); }
TEST_F(SyntheticRun, GoldenFilterGroupBy) {
  expect_golden(report(run_, "table", {{"device", "cpu"}}, "seed"), "report-cpu-by-seed.txt");
}

TEST_F(SyntheticRun, IndexAndRunDirGiveSameTables) {
  std::ostringstream log;
  collect(CollectOptions{run_, true}, log);
  EXPECT_EQ(report(run_ + "/results.h5", "csv"), report(run_, "csv"));
}

TEST_F(SyntheticRun, TablesFitWidth) {
  std::istringstream in(report(run_, "table"));
  std::string line;
  while (std::getline(in, line)) {
    std::size_t cols = 0;
    for (unsigned char c : line) cols += (c & 0xC0) != 0x80;
    EXPECT_LE(cols, 100u) << line;
  }
}

TEST_F(SyntheticRun, BadFilterAndGroupByNameTheFlag) {
  try {
    report(run_, "table", {{"colour", "red"}});
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--filter colour=red"), std::string::npos) << e.what();
  }
  try {
    report(run_, "table", {}, "colour");
    FAIL();
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--group-by colour"), std::string::npos) << e.what();
  }
  EXPECT_THROW(report(dir_->path() + "/nope", "table"), std::invalid_argument);
}

// A run that learned nothing (loss at ln 10) or diverged (NaN) gets a warning under the per-job
// table; a run that learned does not.
TEST(LearningWarnings, ChanceLossAndNaNAreFlagged) {
  auto job = [](const std::string& id, double loss) {
    JobRecord j;
    j.id = id;
    j.status = "completed";
    j.params = gridrun::jobs::JobParams{};  // mlp, lr 0.1
    j.summary["final_test_acc"] = 0.1;
    j.summary["final_train_loss"] = loss;
    return j;
  };
  std::vector<JobRecord> jobs = {job("learned", 0.4), job("flat", 2.3021),
                                 job("nan", std::numeric_limits<double>::quiet_NaN())};
  auto t = build_tables(jobs, {}, ReportOptions{});
  std::string notes;
  for (const auto& n : t.at(0).notes) notes += n + "\n";
  EXPECT_EQ(notes.find("job learned"), std::string::npos) << notes;
  EXPECT_NE(notes.find("warning: job flat: training loss 2.3021 stayed at ln(10)"), std::string::npos)
      << notes;
  EXPECT_NE(notes.find("warning: job nan: training loss is NaN"), std::string::npos) << notes;
}

// Phase figures from the recorded facts: samples summed from the jobs' /summary, throughput over
// the makespan, allocated utilization from busy resource-seconds; a job without a readable file
// counts for the makespan only. Recorded phases come out in the order they ran.
TEST_F(SyntheticRun, PhaseFiguresFromRecordedFacts) {
  std::vector<JobData> files;
  for (const char* id : {"cpu-r1-s0", "cpu-r1-s1"})
    files.push_back(read_job(run_ + "/results/" + id + ".h5"));
  std::vector<const JobData*> read;
  for (const auto& f : files) read.push_back(&f);
  std::map<std::string, gridrun::run::PhaseRecord> recorded;
  gridrun::run::PhaseRecord& r = recorded["several-small"];
  r.name = "several-small";
  r.makespan_s = 100;
  r.busy_resource_s = 200;  // core-seconds on 4 cores
  r.capacity = 4;
  r.jobs = {"cpu-r1-s0", "cpu-r1-s1", "nosuchjob000"};
  PhaseInput in;
  in.recorded = recorded;
  in.compare_by = "arrangement";
  const std::vector<PhaseFigures> phases = complete_phases(in, read);
  ASSERT_EQ(phases.size(), 1u);
  const PhaseFigures& p = phases[0];
  double samples = 0, util = 0;
  for (const auto& j : files) {
    samples += j.summary.at("samples");
    util += j.summary.at("cpu_util_pct_mean") / 100 / 2;
  }
  EXPECT_EQ(p.label, "arrangement=several-small");
  EXPECT_EQ(p.jobs, (std::vector<std::string>{"cpu-r1-s0", "cpu-r1-s1"}));  // the readable files
  EXPECT_DOUBLE_EQ(p.makespan_s, 100);
  EXPECT_DOUBLE_EQ(p.samples, samples);
  EXPECT_DOUBLE_EQ(p.samples_per_s, samples / 100);
  EXPECT_DOUBLE_EQ(p.alloc_util, 0.5);
  EXPECT_DOUBLE_EQ(p.util_mean, util);
}

// The reporters are chosen by name; an unknown one is refused naming the known ones.
TEST(Reporters, ChosenByName) {
  for (const auto& n : reporter_names()) EXPECT_EQ(make_reporter(n)->name(), n);
  try {
    make_reporter("pdf");
    FAIL() << "an unknown reporter was made";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("html"), std::string::npos) << e.what();
  }
}
