// `gridrun report A B ...` as pure logic: matching jobs across runs by id, the comparison table's
// columns, ratios and notes, and the did-you-mean of --filter keys. The real binaries are run
// against two real runs in e2e_compare.py.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>
#include <vector>

#include "gridrun/report/compare.hpp"
#include "gridrun/report/tables.hpp"

using gridrun::base::Table;
using gridrun::jobs::JobParams;
using gridrun::report::compare_tables;
using gridrun::report::LoadedRun;
using gridrun::report::match_runs;
using gridrun::report::ReportOptions;
using gridrun::report::run_label;
using gridrun::results::JobRecord;

namespace {

JobRecord job(const std::string& id, double lr, double samples_per_s, double p50_s,
              const std::string& status = "completed") {
  JobRecord j;
  j.id = id;
  j.status = status;
  JobParams p;
  p.lr = lr;
  j.params = p;
  j.summary["samples_per_s"] = samples_per_s;
  j.summary["step_s_p50"] = p50_s;
  j.summary["final_test_acc"] = 0.9;
  return j;
}

std::size_t column(const Table& t, const std::string& name) {
  for (std::size_t i = 0; i < t.columns.size(); ++i)
    if (t.columns[i] == name) return i;
  ADD_FAILURE() << "no column " << name;
  return 0;
}

bool has_note(const Table& t, const std::string& part) {
  for (const auto& n : t.notes)
    if (n.find(part) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST(CompareRuns, MatchesByIdAndCountsConfigurationsOfOneRun) {
  const std::vector<std::vector<JobRecord>> runs = {
      {job("aaa", 0.1, 100, 0.01), job("bbb", 0.2, 200, 0.02)},
      {job("bbb", 0.2, 300, 0.01), job("aaa", 0.1, 50, 0.02), job("ccc", 0.3, 1, 1)},
      {job("ddd", 0.4, 1, 1), job("aaa", 0.1, 10, 0.1)}};
  const auto m = match_runs(runs);
  ASSERT_EQ(m.rows.size(), 2u);
  EXPECT_EQ(m.rows[0].id, "aaa");
  EXPECT_EQ(m.rows[0].jobs[0], &runs[0][0]);
  EXPECT_EQ(m.rows[0].jobs[1], &runs[1][1]);
  EXPECT_EQ(m.rows[0].jobs[2], &runs[2][1]);
  EXPECT_EQ(m.rows[1].id, "bbb");
  EXPECT_EQ(m.rows[1].jobs[2], nullptr);  // in A and B only: still compared
  ASSERT_EQ(m.only.size(), 3u);
  EXPECT_TRUE(m.only[0].empty());
  EXPECT_EQ(m.only[1], std::vector<std::string>{"ccc"});
  EXPECT_EQ(m.only[2], std::vector<std::string>{"ddd"});
}

TEST(CompareRuns, NoCommonIdsNoRows) {
  const auto m = match_runs({{job("aaa", 0.1, 1, 1)}, {job("bbb", 0.2, 1, 1)}});
  EXPECT_TRUE(m.rows.empty());
  EXPECT_EQ(m.only[0], std::vector<std::string>{"aaa"});
  EXPECT_EQ(m.only[1], std::vector<std::string>{"bbb"});
}

TEST(CompareRuns, Labels) {
  EXPECT_EQ(run_label(0), "A");
  EXPECT_EQ(run_label(1), "B");
  EXPECT_EQ(run_label(25), "Z");
  EXPECT_EQ(run_label(26), "R27");
}

TEST(CompareRuns, TableHasRatiosToTheFirstRun) {
  LoadedRun a, b;
  a.run_dir = "runs/h100/quick/";
  b.run_dir = "runs/a100/quick";
  a.jobs = {job("aaa", 0.1, 100, 0.010), job("bbb", 0.2, 200, 0.020)};
  b.jobs = {job("aaa", 0.1, 150, 0.008), job("bbb", 0.2, 100, 0.040, "failed"), job("ccc", 0.3, 1, 1)};
  b.jobs[1].summary.erase("samples_per_s");  // a failed job has no throughput: no ratio
  ReportOptions o;
  const auto tables = compare_tables({a, b}, o);
  ASSERT_EQ(tables.size(), 2u);
  const Table& runs = tables[0];
  EXPECT_EQ(runs.title, "Runs");
  ASSERT_EQ(runs.rows.size(), 2u);
  EXPECT_EQ(runs.rows[0][0].text, "A");
  EXPECT_EQ(runs.rows[0][1].text, "runs/h100/quick");
  EXPECT_EQ(runs.rows[1][2].value, 3);
  EXPECT_EQ(runs.columns.size(), 3u);  // no job files: no host or build facts that differ

  const Table& t = tables[1];
  ASSERT_EQ(t.rows.size(), 2u);
  EXPECT_EQ(t.columns[0], "id");
  EXPECT_EQ(t.columns[1], "lr");  // the parameter that differs between the rows
  EXPECT_EQ(t.rows[0][0].text, "aaa");
  EXPECT_DOUBLE_EQ(t.rows[0][column(t, "A samples/s")].value, 100);
  EXPECT_DOUBLE_EQ(t.rows[0][column(t, "B samples/s")].value, 150);
  EXPECT_DOUBLE_EQ(t.rows[0][column(t, "B/A samples/s")].value, 1.5);
  EXPECT_DOUBLE_EQ(t.rows[0][column(t, "B/A p50")].value, 0.8);
  EXPECT_DOUBLE_EQ(t.rows[0][column(t, "A p50_ms")].value, 10);
  EXPECT_EQ(t.rows[1][column(t, "B status")].text, "failed");
  EXPECT_TRUE(std::isnan(t.rows[1][column(t, "B/A samples/s")].value));
  EXPECT_DOUBLE_EQ(t.rows[1][column(t, "B/A p50")].value, 2);
  EXPECT_TRUE(has_note(t, "1 configuration(s) in one run only, not compared: B 1 (ccc)"));
  EXPECT_TRUE(has_note(t, "matched by id"));
}

TEST(CompareRuns, ThreeRunsAndFilters) {
  LoadedRun a, b, c;
  a.jobs = {job("aaa", 0.1, 100, 0.01), job("bbb", 0.2, 100, 0.01)};
  b.jobs = {job("aaa", 0.1, 200, 0.01), job("bbb", 0.2, 100, 0.01)};
  c.jobs = {job("bbb", 0.2, 50, 0.01)};
  ReportOptions o;
  o.filters = {{"lr", "0.2"}};
  const auto tables = compare_tables({a, b, c}, o);
  const Table& t = tables[1];
  ASSERT_EQ(t.rows.size(), 1u);
  EXPECT_EQ(t.rows[0][0].text, "bbb");
  EXPECT_DOUBLE_EQ(t.rows[0][column(t, "C/A samples/s")].value, 0.5);
  EXPECT_DOUBLE_EQ(t.rows[0][column(t, "B/A samples/s")].value, 1);
  EXPECT_FALSE(has_note(t, "one run only"));
}

TEST(CompareRuns, NoCommonConfigurationSaysWhy) {
  LoadedRun a, b;
  a.jobs = {job("aaa", 0.1, 1, 1)};
  b.jobs = {job("bbb", 0.2, 1, 1)};
  const auto tables = compare_tables({a, b}, ReportOptions{});
  EXPECT_TRUE(tables[1].rows.empty());
  EXPECT_TRUE(has_note(tables[1], "no configuration is in two of the runs"));
  EXPECT_TRUE(has_note(tables[1], "2 configuration(s) in one run only"));
}

TEST(FilterKeys, NearMissSuggestsTheKey) {
  ReportOptions o;
  o.filters = {{"rank", "1"}};
  try {
    gridrun::report::select_jobs({job("aaa", 0.1, 1, 1)}, o);
    FAIL() << "an unknown key was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown key 'rank'; did you mean 'ranks'?"), std::string::npos)
        << e.what();
    EXPECT_EQ(std::string(e.what()).find("known:"), std::string::npos) << e.what();
  }
  o.filters = {{"zzzzzzzz", "1"}};  // nothing near: no guess
  try {
    gridrun::report::select_jobs({job("aaa", 0.1, 1, 1)}, o);
    FAIL() << "an unknown key was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("unknown key 'zzzzzzzz'"), std::string::npos) << e.what();
    EXPECT_EQ(std::string(e.what()).find("did you mean"), std::string::npos) << e.what();
  }
  o.filters.clear();
  o.group_by = "rank";  // --group-by takes the same keys
  try {
    gridrun::report::select_jobs({job("aaa", 0.1, 1, 1)}, o);
    FAIL() << "an unknown key was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("--group-by rank: unknown key 'rank'; did you mean 'ranks'?"),
              std::string::npos)
        << e.what();
  }
}
