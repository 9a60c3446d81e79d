// The line protocol of command jobs (exec/protocol.hpp): what is a record, what is output, what is
// a bad record, and the non-finite losses Python's json.dumps writes.
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "job_run.hpp"
#include "protocol.hpp"

namespace gridrun::exec {
namespace {

TEST(Protocol, StepWithSamplesAndMetrics) {
  const Record r =
      parse_record(R"(  {"gridrun": "step", "loss": 0.52, "samples": 64, "acc": 0.9, "tag": "x"})");
  const auto* s = std::get_if<StepRecord>(&r);
  ASSERT_NE(s, nullptr);
  EXPECT_DOUBLE_EQ(s->loss, 0.52);
  ASSERT_TRUE(s->samples);
  EXPECT_DOUBLE_EQ(*s->samples, 64);
  EXPECT_FALSE(s->step);
  ASSERT_EQ(s->metrics.size(), 1u);  // strings are not metrics
  EXPECT_DOUBLE_EQ(s->metrics.at("acc"), 0.9);
}

TEST(Protocol, OrdinaryOutputIsNoRecord) {
  for (const char* line : {"", "step 3 loss 0.5", "{\"loss\": 1}", "[1, 2]", "{\"gridrun\"", "{not json"})
    EXPECT_TRUE(std::holds_alternative<Output>(parse_record(line))) << line;
}

TEST(Protocol, NonFiniteLossesAreReadAsSuch) {
  for (const char* tok : {"NaN", "Infinity", "-Infinity", "null"}) {
    const Record r = parse_record(std::string(R"({"gridrun": "step", "loss": )") + tok + "}");
    const auto* s = std::get_if<StepRecord>(&r);
    ASSERT_NE(s, nullptr) << tok;
    EXPECT_FALSE(std::isfinite(s->loss)) << tok;
  }
  // A string holding the token is not rewritten.
  const Record r = parse_record(R"({"gridrun": "summary", "note": "NaN", "x": 1})");
  const auto* m = std::get_if<SummaryRecord>(&r);
  ASSERT_NE(m, nullptr);
  EXPECT_EQ(m->values.size(), 1u);
}

TEST(Protocol, BadRecordsSayWhy) {
  const std::pair<const char*, const char*> cases[] = {
      {R"({"gridrun": "step"})", "no \"loss\""},
      {R"({"gridrun": "step", "loss": "x"})", "must be a number"},
      {R"({"gridrun": "step", "loss": 1, "samples": -1})", "samples"},
      {R"({"gridrun": "step", "loss": 1, "step": 1.5})", "integer"},
      {R"({"gridrun": "epoch", "test_acc": "high"})", "test_acc"},
      {R"({"gridrun": "stpe", "loss": 1})", "unknown record"},
      {R"({"gridrun": 3})", "name the record"},
      {R"({"gridrun": "step", "loss": 1,})", "not JSON"},
  };
  for (const auto& [line, why] : cases) {
    const Record r = parse_record(line);
    const auto* b = std::get_if<BadRecord>(&r);
    ASSERT_NE(b, nullptr) << line;
    EXPECT_NE(b->why.find(why), std::string::npos) << line << " -> " << b->why;
  }
}

TEST(Protocol, EpochAndSummary) {
  const Record r =
      parse_record(R"({"gridrun": "epoch", "epoch": 2, "train_loss": 0.4, "test_acc": 0.91, "lr": 0.1})");
  const auto* e = std::get_if<EpochRecord>(&r);
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->epoch, 2);
  EXPECT_DOUBLE_EQ(e->test_acc.value(), 0.91);
  EXPECT_FALSE(e->test_loss);
  EXPECT_DOUBLE_EQ(e->metrics.at("lr"), 0.1);
}

TEST(Protocol, OverlongLinesAreOutput) {
  std::string line = R"({"gridrun": "step", "loss": 1, "pad": ")";
  line += std::string(kMaxRecordLine, 'x') + "\"}";
  EXPECT_TRUE(std::holds_alternative<Output>(parse_record(line)));
}

TEST(RankFacts, FromOpenMpiEnvironment) {
  ::setenv("OMPI_COMM_WORLD_RANK", "1", 1);
  ::setenv("OMPI_COMM_WORLD_SIZE", "4", 1);
  ::setenv("OMPI_COMM_WORLD_LOCAL_RANK", "1", 1);
  ::setenv("OMPI_COMM_WORLD_LOCAL_SIZE", "2", 1);
  const RankFacts f = rank_facts();
  EXPECT_EQ(f.rank, 1);
  EXPECT_EQ(f.world, 4);
  EXPECT_EQ(f.local_rank, 1);
  EXPECT_EQ(f.local_world, 2);
  for (const char* v : {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_LOCAL_RANK",
                        "OMPI_COMM_WORLD_LOCAL_SIZE"})
    ::unsetenv(v);
}

TEST(RankFacts, SlurmHostLists) {
  using V = std::vector<std::string>;
  EXPECT_EQ(expand_hostlist("host1"), V({"host1"}));
  EXPECT_EQ(expand_hostlist("host[1-2]"), V({"host1", "host2"}));
  EXPECT_EQ(expand_hostlist("host[1-2,5],gpu01"), V({"host1", "host2", "host5", "gpu01"}));
  EXPECT_EQ(expand_hostlist("node[08-10]-ib"), V({"node08-ib", "node09-ib", "node10-ib"}));
  EXPECT_EQ(expand_hostlist("a,b[3]"), V({"a", "b3"}));
  EXPECT_TRUE(expand_hostlist("host[1-").empty());
  EXPECT_TRUE(expand_hostlist("host[2-1]").empty());
  EXPECT_TRUE(expand_hostlist("host[x]").empty());
}

TEST(RankFacts, FromSlurmEnvironment) {
  EXPECT_EQ(tasks_on_node("2(x3),1", 0), 2);
  EXPECT_EQ(tasks_on_node("2(x3),1", 2), 2);
  EXPECT_EQ(tasks_on_node("2(x3),1", 3), 1);
  EXPECT_EQ(tasks_on_node("2(x3),1", 4), std::nullopt);
  EXPECT_EQ(tasks_on_node("x", 0), std::nullopt);
  EXPECT_EQ(tasks_on_node(nullptr, 0), std::nullopt);
  // A 2-rank step over 2 hosts, the second rank: one task on its node.
  ::setenv("SLURM_PROCID", "1", 1);
  ::setenv("SLURM_NTASKS", "2", 1);
  ::setenv("SLURM_LOCALID", "0", 1);
  ::setenv("SLURM_NODEID", "1", 1);
  ::setenv("SLURM_STEP_TASKS_PER_NODE", "1(x2)", 1);
  const RankFacts f = rank_facts();
  EXPECT_EQ(f.rank, 1);
  EXPECT_EQ(f.world, 2);
  EXPECT_EQ(f.local_rank, 0);
  EXPECT_EQ(f.local_world, 1);
  for (const char* v :
       {"SLURM_PROCID", "SLURM_NTASKS", "SLURM_LOCALID", "SLURM_NODEID", "SLURM_STEP_TASKS_PER_NODE"})
    ::unsetenv(v);
}

}  // namespace
}  // namespace gridrun::exec
