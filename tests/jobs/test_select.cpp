// Selectors (--only, report --filter) and overrides (--set): parsing, typed matching, the messages
// that name the flag, and overrides applied by the expander as the innermost layer.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "gridrun/jobs/grid.hpp"
#include "gridrun/jobs/select.hpp"
#include "gridrun/jobs/suggest.hpp"

namespace gj = gridrun::jobs;

namespace {

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  return "(no error)";
}

const char* const kGrid =
    "name: g\n"
    "defaults: {model: mlp, dataset: synthetic, epochs: 3}\n"
    "grid:\n"
    "  device: [cpu, gpu]\n"
    "  lr: [0.1, 0.05]\n";

}  // namespace

TEST(JobsSelect, ParsesKeyAndValueList) {
  const gj::Selector s = gj::parse_selector("device=cpu,gpu", "--only");
  EXPECT_EQ(s.key, "device");
  EXPECT_EQ(s.values, (std::vector<std::string>{"cpu", "gpu"}));
  EXPECT_TRUE(s.matches(std::string("gpu")));
  EXPECT_FALSE(s.matches(std::string("tpu")));
}

TEST(JobsSelect, ComparesTypedValues) {
  const gj::Selector lr = gj::parse_selector("lr=0.10", "--only");
  EXPECT_TRUE(lr.matches(std::string("0.1")));
  EXPECT_TRUE(lr.matches(gj::Value{0.1}));
  EXPECT_TRUE(gj::parse_selector("lr=1", "--only").matches(gj::Value{std::int64_t{1}}));
  EXPECT_TRUE(gj::parse_selector("ranks=2,4", "--only").matches(std::string("4")));
  EXPECT_TRUE(gj::parse_selector("ranks=1e0", "--only").matches(gj::Value{std::int64_t{1}}));
  EXPECT_FALSE(lr.matches(std::string("0.11")));
}

TEST(JobsSelect, ExtraKeysAreText) {
  const gj::Selector s = gj::parse_selector("status=completed", "--filter", {"id", "status"});
  EXPECT_EQ(s.spec, nullptr);
  EXPECT_TRUE(s.matches(std::string("completed")));
  EXPECT_FALSE(s.matches(std::string("failed")));
}

TEST(JobsSelect, ErrorsNameTheFlag) {
  EXPECT_EQ(error_of([] {
              gj::parse_selector("rank=1", "--filter", {"id", "status"});
            }),
            "--filter rank=1: unknown key 'rank'; did you mean 'ranks'?");
  EXPECT_EQ(error_of([] { gj::parse_selector("devic=cpu", "--only"); }),
            "--only devic=cpu: unknown key 'devic'; did you mean 'device'?");
  EXPECT_EQ(error_of([] { gj::parse_selector("lr=abc", "--only"); }),
            "--only lr=abc: lr: expected a number, got 'abc'");
  EXPECT_EQ(error_of([] { gj::parse_selector("device", "--only"); }),
            "--only device: expected KEY=VALUE[,VALUE...]");
  EXPECT_EQ(error_of([] { gj::parse_selector("device=cpu,", "--only"); }),
            "--only device=cpu,: empty value (expected KEY=VALUE[,VALUE...])");
}

TEST(JobsSelect, SelectsASubsetKeepingIds) {
  const gj::Expansion ex = gj::load_grid_string(kGrid, "g.yaml");
  ASSERT_EQ(ex.jobs.size(), 4u);
  const auto cpu = gj::select_jobs(ex.jobs, gj::parse_selectors({"device=cpu"}, "--only"));
  ASSERT_EQ(cpu.size(), 2u);
  EXPECT_EQ(cpu[0].id, ex.jobs[0].id);
  EXPECT_EQ(cpu[1].index, ex.jobs[1].index);
  const auto one = gj::select_jobs(ex.jobs, gj::parse_selectors({"device=gpu", "lr=0.050"}, "--only"));
  ASSERT_EQ(one.size(), 1u);
  EXPECT_EQ(one[0].id, ex.jobs[3].id);
  const auto by_id = gj::select_jobs(ex.jobs, gj::parse_selectors({"id=" + ex.jobs[2].id}, "--only", {"id"}));
  ASSERT_EQ(by_id.size(), 1u);
  EXPECT_EQ(by_id[0].id, ex.jobs[2].id);
  EXPECT_EQ(error_of([&] { gj::select_jobs(ex.jobs, gj::parse_selectors({"device=tpu"}, "--only")); }),
            "--only device=tpu: selects none of the grid's 4 jobs");
}

TEST(JobsOverride, ValidatedAsInTheGridFile) {
  const auto ov = gj::parse_override("epochs=1");
  EXPECT_EQ(ov.first, "epochs");
  EXPECT_EQ(ov.second, gj::Value{std::int64_t{1}});
  EXPECT_EQ(error_of([] { gj::parse_override("epochs=x"); }),
            "--set epochs=x: epochs: expected an integer, got 'x'");
  EXPECT_EQ(error_of([] { gj::parse_override("epochs=-1"); }),
            "--set epochs=-1: epochs: -1 is out of range (must be >= 0)");
  EXPECT_EQ(error_of([] { gj::parse_override("epoch=1"); }),
            "--set epoch=1: unknown key 'epoch'; did you mean 'epochs'?");
  EXPECT_EQ(error_of([] {
              gj::parse_overrides({"epochs=1", "epochs=2"});
            }),
            "--set epochs=2: epochs is already set");
}

TEST(JobsOverride, WinsOverEveryGridLayerAndChangesIds) {
  const gj::Expansion plain = gj::load_grid_string(kGrid, "g.yaml");
  gj::LoadOptions lo;
  lo.overrides = gj::parse_overrides({"epochs=1"});
  const gj::Expansion ex = gj::load_grid_string(kGrid, "g.yaml", lo);
  ASSERT_EQ(ex.jobs.size(), 4u);
  for (std::size_t i = 0; i < ex.jobs.size(); ++i) {
    EXPECT_EQ(ex.jobs[i].params.epochs, 1);
    EXPECT_NE(ex.jobs[i].id, plain.jobs[i].id);
    EXPECT_EQ(ex.jobs[i].id, gj::job_id(ex.jobs[i].params));
  }
  // Over a grid axis: every job takes the value, the duplicates are dropped with a warning.
  lo.overrides = gj::parse_overrides({"lr=0.1"});
  const gj::Expansion one_lr = gj::load_grid_string(kGrid, "g.yaml", lo);
  ASSERT_EQ(one_lr.jobs.size(), 2u);
  EXPECT_EQ(one_lr.jobs[0].id, plain.jobs[0].id);
  EXPECT_EQ(one_lr.duplicates, 2u);
  // A combination the checks refuse is reported at the override.
  lo.overrides = gj::parse_overrides({"epochs=0"});
  EXPECT_NE(error_of([&] { gj::load_grid_string(kGrid, "g.yaml", lo); }).find("g.yaml: --set epochs: "),
            std::string::npos);
}

// One flag hint for both binaries (gridrun's cli.cpp and gridrun-train's options.cpp).
TEST(JobsSuggest, FlagHintNamesTheClosestLongFlag) {
  const std::vector<std::string> flags{"width", "format", "", "epochs"};
  EXPECT_EQ(gj::flag_hint("--widht", flags), "; did you mean '--width'?");
  EXPECT_EQ(gj::flag_hint("--epoch=3", flags), "; did you mean '--epochs'?");
  EXPECT_EQ(gj::flag_hint("-w", flags), "");
  EXPECT_EQ(gj::flag_hint("--zzzzzzzz", flags), "");
}
