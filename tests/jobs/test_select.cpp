// Selectors (--only, report --filter) and overrides (--set): parsing, typed matching, the messages
// that name the flag, and overrides applied by the expander as the innermost layer.
#include <gtest/gtest.h>

#include <set>
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
  // A key no parameter of gridrun's has may be one of a command grid's own (params:): the jobs
  // tell, with the same did-you-mean.
  const gj::Expansion ex = gj::load_grid_string(kGrid, "g.yaml");
  EXPECT_EQ(gj::undeclared(gj::parse_selector("rank=1", "--filter", {"id", "status"}), ex.jobs[0].params,
                           "--filter"),
            "--filter rank=1: unknown key 'rank'; did you mean 'ranks'?");
  EXPECT_EQ(error_of([&] { gj::select_jobs(ex.jobs, gj::parse_selectors({"devic=cpu"}, "--only")); }),
            "--only devic=cpu: unknown key 'devic'; did you mean 'device'?");
  EXPECT_EQ(error_of([] { gj::parse_selector("dev-ice=cpu", "--only"); }),
            "--only dev-ice=cpu: unknown key 'dev-ice'; did you mean 'device'?");
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
  // A key that is no parameter of gridrun's is left to the grid (its own params:), which refuses it.
  EXPECT_EQ(error_of([] {
              gj::LoadOptions o;
              o.overrides = gj::parse_overrides({"epoch=1"});
              gj::load_grid_string(kGrid, "g.yaml", o);
            }),
            "--set epoch=1: unknown key 'epoch'; did you mean 'epochs'?");
  EXPECT_EQ(error_of([] { gj::parse_override("ep och=1"); }),
            "--set ep och=1: unknown key 'ep och'; did you mean 'epochs'?");
  // The same value twice is an error; two values of one key are a list (JobsOverrideList).
  EXPECT_EQ(error_of([] {
              gj::parse_overrides({"epochs=1", "epochs=1"});
            }),
            "--set epochs=1: epochs=1 is given twice");
}

// `--set KEY=A,B` (issue 58, hydra's multirun spelling): every value checked as a single one would
// be, the message naming the flag, the text and the value.
TEST(JobsOverrideList, EveryValueCheckedAsOne) {
  using KV = std::pair<std::string, gj::Value>;
  const auto lr = gj::parse_overrides({"lr=0.1,0.2"});
  EXPECT_EQ(lr, (std::vector<KV>{{"lr", 0.1}, {"lr", 0.2}}));
  EXPECT_EQ(error_of([] { gj::parse_overrides({"lr=0.1,abc"}); }),
            "--set lr=0.1,abc: lr: expected a number, got 'abc'");
  EXPECT_EQ(error_of([] { gj::parse_overrides({"epochs=1,-1"}); }),
            "--set epochs=1,-1: epochs: -1 is out of range (must be >= 0)");
  EXPECT_EQ(error_of([] { gj::parse_overrides({"lr=0.1,"}); }),
            "--set lr=0.1,: empty value in the list (expected KEY=VALUE[,VALUE...])");
  EXPECT_EQ(error_of([] { gj::parse_overrides({"lr=0.1,0.10"}); }),
            "--set lr=0.1,0.10: lr=0.1 is given twice");
  EXPECT_EQ(
      error_of([] { gj::parse_overrides({"model=mlp,resnet"}); }).rfind("--set model=mlp,resnet: model: ", 0),
      0u);
  // A repeated key adds values (how state.json records a list: one KEY=VALUE per value), grouped
  // by key in the order the keys first appear.
  EXPECT_EQ(gj::parse_overrides({"lr=0.1", "lr=0.2"}), lr);
  EXPECT_EQ(gj::parse_overrides({"model=mlp,lenet", "epochs=2", "model=resnet18"}),
            (std::vector<KV>{{"model", std::string("mlp")},
                             {"model", std::string("lenet")},
                             {"model", std::string("resnet18")},
                             {"epochs", std::int64_t{2}}}));
  // A free string keeps its commas (mlp_hidden's layers, a path): one value; a list of them is the
  // flag repeated, and a comma that makes a value invalid says so.
  EXPECT_EQ(gj::parse_overrides({"mlp_hidden=512,256"}),
            (std::vector<KV>{{"mlp_hidden", std::string("512,256")}}));
  EXPECT_EQ(gj::parse_overrides({"mlp_hidden=512,256", "mlp_hidden=64"}).size(), 2u);
  EXPECT_NE(error_of([] { gj::parse_overrides({"time_limit=10,20"}); })
                .find("(a comma is part of a time_limit value; give several values as --set time_limit=A "
                      "--set time_limit=B)"),
            std::string::npos);
  EXPECT_FALSE(gj::override_list_splits(*gj::find_param("data_dir")));
  EXPECT_TRUE(gj::override_list_splits(*gj::find_param("device")));
  EXPECT_TRUE(gj::override_list_splits(*gj::find_param("lr")));
}

namespace {

std::set<std::string> ids_of(const gj::Expansion& ex) {
  std::set<std::string> ids;
  for (const auto& j : ex.jobs) ids.insert(j.id);
  return ids;
}

// The grid once per value with a single --set each: the jobs a list must give, with their ids.
std::set<std::string> ids_one_by_one(const char* grid, const std::string& key,
                                     const std::vector<std::string>& values) {
  std::set<std::string> ids;
  for (const auto& v : values) {
    gj::LoadOptions lo;
    lo.overrides = gj::parse_overrides({key + "=" + v});
    for (const auto& id : ids_of(gj::load_grid_string(grid, "g.yaml", lo))) ids.insert(id);
  }
  return ids;
}

std::string text_of(const gj::Job& j, const std::string& key) {
  return gj::to_string(gj::get_param(j.params, key));
}

}  // namespace

// A list replaces the grid's own axis over its key, in its place: every job of the grid, that key
// aside, once per value, and each job has the id the same job has with a single --set.
TEST(JobsOverrideList, ReplacesTheGridAxisInPlace) {
  gj::LoadOptions lo;
  lo.overrides = gj::parse_overrides({"lr=0.2,0.3,0.4"});
  const gj::Expansion ex = gj::load_grid_string(kGrid, "g.yaml", lo);
  ASSERT_EQ(ex.jobs.size(), 6u);
  EXPECT_EQ(ex.duplicates, 0u);
  EXPECT_TRUE(ex.warnings.empty());
  const std::vector<std::pair<std::string, std::string>> want = {
      {"cpu", "0.2"}, {"cpu", "0.3"}, {"cpu", "0.4"}, {"gpu", "0.2"}, {"gpu", "0.3"}, {"gpu", "0.4"}};
  for (std::size_t i = 0; i < ex.jobs.size(); ++i) {
    EXPECT_EQ(text_of(ex.jobs[i], "device"), want[i].first) << i;
    EXPECT_EQ(text_of(ex.jobs[i], "lr"), want[i].second) << i;
    EXPECT_EQ(ex.jobs[i].id, gj::job_id(ex.jobs[i].params));
  }
  EXPECT_EQ(ids_of(ex), ids_one_by_one(kGrid, "lr", {"0.2", "0.3", "0.4"}));
  EXPECT_EQ(ex.varying, (std::vector<std::string>{"lr", "device"}));
}

// A key the grid does not vary: a new axis after the grid's (fastest before the seeds).
TEST(JobsOverrideList, NewAxisAfterTheGrids) {
  gj::LoadOptions lo;
  lo.overrides = gj::parse_overrides({"epochs=1,2", "optimizer=adam"});
  const gj::Expansion ex = gj::load_grid_string(kGrid, "g.yaml", lo);
  ASSERT_EQ(ex.jobs.size(), 8u);
  for (std::size_t i = 0; i < ex.jobs.size(); ++i) {
    EXPECT_EQ(ex.jobs[i].params.epochs, i % 2 == 0 ? 1 : 2) << i;
    EXPECT_EQ(ex.jobs[i].params.lr, (i / 2) % 2 == 0 ? 0.1 : 0.05) << i;
    EXPECT_EQ(ex.jobs[i].params.optimizer, "adam");
  }
  gj::LoadOptions one;
  std::set<std::string> want;
  for (const char* e : {"epochs=1", "epochs=2"}) {
    one.overrides = gj::parse_overrides({e, "optimizer=adam"});
    for (const auto& id : ids_of(gj::load_grid_string(kGrid, "g.yaml", one))) want.insert(id);
  }
  EXPECT_EQ(ids_of(ex), want);
}

// A zip column leaves the zip (its other columns still vary together), seeds: are replaced by a
// list of seed, include: entries are crossed with the list (its values over theirs), and a list of
// one batch key replaces an axis of the other.
TEST(JobsOverrideList, ZipSeedsIncludeAndBatch) {
  const char* grid =
      "name: z\n"
      "defaults: {model: mlp, dataset: synthetic, epochs: 1}\n"
      "zip:\n"
      "  lr: [0.1, 0.2]\n"
      "  warmup_steps: [0, 10]\n"
      "seeds: [0, 1]\n"
      "include:\n"
      "  - {lr: 0.5, ranks: 2}\n";
  gj::LoadOptions lo;
  lo.overrides = gj::parse_overrides({"lr=0.3,0.4"});
  const gj::Expansion ex = gj::load_grid_string(grid, "z.yaml", lo);
  ASSERT_EQ(ex.jobs.size(), 12u);  // (2 warmups x 2 lr x 2 seeds) + (1 include x 2 lr x 2 seeds)
  const std::vector<std::string> product = {"0 0.3 0",  "0 0.3 1",  "0 0.4 0",  "0 0.4 1",
                                            "10 0.3 0", "10 0.3 1", "10 0.4 0", "10 0.4 1"};
  for (std::size_t i = 0; i < product.size(); ++i)
    EXPECT_EQ(text_of(ex.jobs[i], "warmup_steps") + " " + text_of(ex.jobs[i], "lr") + " " +
                  text_of(ex.jobs[i], "seed"),
              product[i])
        << i;
  for (std::size_t i = 8; i < 12; ++i) {
    EXPECT_EQ(ex.jobs[i].params.ranks, 2) << i;
    EXPECT_EQ(text_of(ex.jobs[i], "lr"), i < 10 ? "0.3" : "0.4") << i;
    EXPECT_EQ(ex.jobs[i].params.seed, static_cast<std::int64_t>(i % 2)) << i;
  }
  lo.overrides = gj::parse_overrides({"seed=5,6"});
  const gj::Expansion seeds = gj::load_grid_string(grid, "z.yaml", lo);
  ASSERT_EQ(seeds.jobs.size(), 6u);  // 2 zip points x 2 seeds + 1 include x 2 seeds
  for (const auto& j : seeds.jobs) EXPECT_TRUE(j.params.seed == 5 || j.params.seed == 6) << j.params.seed;

  const char* batch =
      "name: b\n"
      "defaults: {model: mlp, dataset: synthetic, epochs: 1, ranks: 2}\n"
      "grid:\n"
      "  batch_per_rank: [16, 32]\n"
      "  lr: [0.1, 0.2]\n";
  lo.overrides = gj::parse_overrides({"global_batch=64,128"});
  const gj::Expansion gb = gj::load_grid_string(batch, "b.yaml", lo);
  ASSERT_EQ(gb.jobs.size(), 4u);
  EXPECT_EQ(gb.duplicates, 0u);
  for (std::size_t i = 0; i < gb.jobs.size(); ++i) {
    EXPECT_EQ(gb.jobs[i].params.global_batch, i < 2 ? 64 : 128) << i;
    EXPECT_EQ(gb.jobs[i].params.batch_per_rank, i < 2 ? 32 : 64) << i;
  }
  lo.overrides = gj::parse_overrides({"global_batch=64,128", "batch_per_rank=8"});
  EXPECT_EQ(error_of([&] { gj::load_grid_string(batch, "b.yaml", lo); }),
            "--set: give either batch_per_rank or global_batch, not both");
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
