// collect + report on a synthetic run written with the real writer; report outputs are compared
// with golden files in tests/report/golden/ (on mismatch the actual output is written next to
// the test binary as <name>.actual for diffing).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
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

// The jobs table's first column (the ids), row by row.
using Ids = std::vector<std::string>;
Ids ids(const gridrun::base::Table& t) {
  Ids v;
  for (const auto& r : t.rows) v.push_back(r.at(0).text);
  return v;
}

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
  // Issue 58: own-model-cpu.yaml's 3-step jobs ended at 2.81, 6.24 and 4.56 (far from ln 10) and
  // were told they "stayed at ln(10)"; a loss near ln 10 with a test accuracy above chance is a
  // run that is learning.
  JobRecord learning = job("learning", 2.31);
  learning.summary["final_test_acc"] = 0.42;
  std::vector<JobRecord> jobs = {job("learned", 0.4),
                                 job("flat", 2.3021),
                                 job("nan", std::numeric_limits<double>::quiet_NaN()),
                                 job("short1", 2.81),
                                 job("short2", 6.24),
                                 job("short3", 4.5556),
                                 learning};
  auto t = build_tables(jobs, {}, ReportOptions{});
  std::string notes;
  for (const auto& n : t.at(0).notes) notes += n + "\n";
  EXPECT_EQ(notes.find("job learned"), std::string::npos) << notes;
  for (const char* id : {"short1", "short2", "short3", "learning"})
    EXPECT_EQ(notes.find(std::string("job ") + id + ":"), std::string::npos) << notes;
  EXPECT_NE(notes.find("warning: job flat: training loss 2.3021 stayed at ln(10) = 2.3026 and test accuracy "
                       "0.100 at chance: it did not learn (try a smaller lr)\n"),
            std::string::npos)
      << notes;
  EXPECT_NE(notes.find("warning: job nan: training loss is NaN"), std::string::npos) << notes;
}

// A grid varying `epochs` (or report --all over two grids): the jobs table has one epochs column,
// epochs done of planned (issue 58: "epochs" was shown twice, the planned and the done).
TEST(JobsTable, VaryingEpochsIsOneColumn) {
  auto job = [](const std::string& id, std::int64_t planned, double done) {
    JobRecord j;
    j.id = id;
    j.status = done < static_cast<double>(planned) ? "target_reached" : "completed";
    gridrun::jobs::JobParams p;
    p.epochs = planned;
    j.params = p;
    j.summary["epochs_done"] = done;
    return j;
  };
  auto t = build_tables({job("a", 2, 2), job("b", 4, 3)}, {}, ReportOptions{});
  const auto& cols = t.at(0).columns;
  EXPECT_EQ(std::count(cols.begin(), cols.end(), "epochs"), 1);
  const auto at = std::find(cols.begin(), cols.end(), "epochs") - cols.begin();
  EXPECT_EQ(t.at(0).rows.at(0).at(at).text, "2/2");
  EXPECT_EQ(t.at(0).rows.at(1).at(at).text, "3/4");
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

// `report --rows N` (issue 60: 100,000 jobs printed 200,000 lines): the first N rows of the jobs
// table in its order, then every failed or diverged job after them, and a note of the rest; 0: all.
TEST(JobRows, AtMostNRowsAndEveryFailedOne) {
  std::vector<JobRecord> jobs;
  for (int i = 0; i < 9; ++i) {
    JobRecord j;
    j.id = "job" + std::to_string(i);
    j.status = i == 6 ? "failed" : i == 8 ? "diverged" : "completed";
    j.params = gridrun::jobs::JobParams{};
    j.params->seed = i;
    jobs.push_back(j);
  }
  auto table = [&](std::size_t rows) {
    ReportOptions o;
    o.max_job_rows = rows;
    return build_tables(jobs, {}, o).at(0);
  };
  const gridrun::base::Table three = table(3);
  EXPECT_EQ(ids(three), (Ids{"job0", "job1", "job2", "job6", "job8"}));
  std::string notes;
  for (const auto& n : three.notes) notes += n + "\n";
  EXPECT_NE(notes.find("failed job6: no reason recorded"), std::string::npos) << notes;
  EXPECT_NE(notes.find("4 of 9 jobs not shown (the first 3 in this order and every failed one are): "
                       "--rows 0 shows all"),
            std::string::npos)
      << notes;
  EXPECT_EQ(ids(table(0)).size(), 9u);
  EXPECT_EQ(ids(table(9)).size(), 9u);
  for (const auto& n : table(9).notes) EXPECT_EQ(n.find("jobs not shown"), std::string::npos) << n;
}

// `report --sort METRIC [--top N]` (issue 58): the jobs table by a summary figure, largest first
// unless the figure is a loss, time or cost, or as told (:asc, :desc); jobs without it last; --top
// keeps the first N rows; a metric the table does not show gets a column; an unknown one is refused
// with a did-you-mean and the names there are.
TEST(JobSort, OrdersTheJobsTableByAFigure) {
  const double none = std::numeric_limits<double>::quiet_NaN();
  auto job = [&](const std::string& id, double acc, double wall) {
    JobRecord j;
    j.id = id;
    j.status = "completed";
    j.params = gridrun::jobs::JobParams{};
    if (!std::isnan(acc)) j.summary["final_test_acc"] = acc;
    j.summary["wall_s"] = wall;
    j.summary["final_train_loss"] = 0.5;
    return j;
  };
  const std::vector<JobRecord> jobs = {job("a", 0.7, 30), job("b", none, 10), job("c", 0.9, 20),
                                       job("d", 0.8, 40)};
  auto jobs_table = [&](const std::string& sort, std::size_t top) {
    ReportOptions o;
    o.sort = sort;
    o.top = top;
    return build_tables(jobs, {}, o).at(0);
  };
  EXPECT_EQ(ids(jobs_table("test_acc", 0)), (Ids{"c", "d", "a", "b"}));
  const gridrun::base::Table top3 = jobs_table("test_acc", 3);
  EXPECT_EQ(ids(top3), (Ids{"c", "d", "a"}));
  std::string notes;
  for (const auto& n : top3.notes) notes += n + "\n";
  EXPECT_NE(notes.find(
                "sorted by test_acc, largest first (jobs without it last); the first 3 of 4 jobs (--top 3)."),
            std::string::npos)
      << notes;
  EXPECT_EQ(ids(jobs_table("final_test_acc:asc", 0)), (Ids{"a", "d", "c", "b"}));
  const gridrun::base::Table wall = jobs_table("wall_s", 0);
  EXPECT_EQ(ids(wall), (Ids{"b", "c", "a", "d"}));  // a time: smallest first
  ASSERT_GE(wall.columns.size(), 3u);
  EXPECT_EQ(wall.columns.at(2), "wall_s");  // id, status, then the metric the table does not show
  EXPECT_EQ(wall.rows.at(0).at(2).value, 10);
  EXPECT_EQ(ids(jobs_table("wall_s:desc", 2)), (Ids{"d", "a"}));
  const gridrun::base::Table acc = jobs_table("test_acc", 0);  // shown already: no second column
  EXPECT_EQ(std::count(acc.columns.begin(), acc.columns.end(), "test_acc"), 1);

  auto error_of = [&](const std::string& sort) {
    try {
      jobs_table(sort, 0);
    } catch (const std::invalid_argument& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
  const std::string unknown = error_of("tset_acc");
  EXPECT_EQ(
      unknown.rfind("--sort tset_acc: unknown metric 'tset_acc'; did you mean 'test_acc'? (expected a "
                    "column of the jobs table: test_acc, samples/s, p50_ms, p95_ms, comm%, epochs, util%, "
                    "peak_mem; or a /summary figure: ",
                    0),
      0u)
      << unknown;
  EXPECT_NE(unknown.find("wall_s"), std::string::npos) << unknown;
  EXPECT_EQ(error_of("test_acc:up"), "--sort test_acc:up: expected METRIC or METRIC:asc|desc, not ':up'");

  for (const char* up : {"test_acc", "best_test_acc", "samples/s", "samples_per_s", "samples_per_s_wall",
                         "mfu", "flops_per_s", "epochs", "util%", "cpu_util_pct_mean"})
    EXPECT_TRUE(sorts_descending(up)) << up;
  for (const char* down : {"wall_s", "step_s_p50", "p50_ms", "p95_ms", "comm%", "comm_share", "peak_mem",
                           "peak_rss_bytes", "final_train_loss", "energy_per_sample_j", "time_to_target_s",
                           "epochs_to_target", "latency_p99_s", "rank_max_step_s_mean"})
    EXPECT_FALSE(sorts_descending(down)) << down;
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
