// The status cache's codec (scheduler/status.hpp encode_status/decode_status): every field a
// status prints comes back, a damaged cache throws (the caller recomputes), and only a settled
// status (no Slurm job, none running or queued) is cached.
#include <gtest/gtest.h>

#include <cmath>
#include <sstream>
#include <stdexcept>

#include "gridrun/status/status.hpp"

namespace gs = gridrun::status;
using gridrun::run::JobOutcome;

namespace {

gs::RunStatus sample() {
  gs::RunStatus st;
  st.name = "grid";
  st.run_dir = "runs/grid";
  st.varying = {"lr", "seed"};
  for (int i = 0; i < 3; ++i) {
    gs::JobStatusRow r;
    r.id = "00000000000" + std::to_string(i);
    r.state = i == 2 ? JobOutcome::Failed : JobOutcome::Completed;
    r.exit_code = i == 2 ? 1 : 0;
    r.attempts = 1 + i;
    r.attempt_hosts = {"host" + std::to_string(i), "b,c"};
    r.reason = i == 2 ? "loss is NaN at step 3" : "";
    r.elapsed = "00:00:0" + std::to_string(i);
    r.elapsed_s = i;
    r.step = 10 * i;
    r.params = {"0.1", std::to_string(i)};
    st.jobs.push_back(r);
    st.counts[r.state] += 1;
  }
  st.damaged = {"results/x.h5.damaged"};
  st.warnings = {"a warning"};
  st.resume_command = "gridrun run g.yaml --out runs";
  st.has_prediction = true;
  return st;
}

std::string text(const gs::RunStatus& st, gs::StatusFormat f) {
  std::ostringstream os;
  gs::print_status(st, f, os, 200);
  return os.str();
}

}  // namespace

TEST(StatusCache, RoundTripPrintsTheSame) {
  const gs::RunStatus st = sample();
  gs::RunStatus back = gs::decode_status(gs::encode_status(st));
  back.run_dir = st.run_dir;  // the caller's spelling, not cached
  for (auto f : {gs::StatusFormat::Table, gs::StatusFormat::Json, gs::StatusFormat::Csv})
    EXPECT_EQ(text(back, f), text(st, f));
  ASSERT_EQ(back.jobs.size(), 3u);
  EXPECT_EQ(back.jobs[2].reason, "loss is NaN at step 3");
  EXPECT_EQ(back.jobs[1].attempt_hosts, (std::vector<std::string>{"host1", "b,c"}));
  EXPECT_TRUE(std::isnan(back.jobs[0].eta_s));
  EXPECT_EQ(back.counts, st.counts);
  EXPECT_EQ(back.resume_command, st.resume_command);
}

TEST(StatusCache, DamagedBytesThrow) {
  const std::string bytes = gs::encode_status(sample());
  for (std::size_t cut : {std::size_t{0}, std::size_t{7}, bytes.size() / 2, bytes.size() - 1})
    EXPECT_THROW(gs::decode_status(bytes.substr(0, cut)), std::runtime_error) << cut;
  EXPECT_THROW(gs::decode_status(bytes + "x"), std::runtime_error);
  std::string other = bytes;
  other[0] = 9;  // another version
  EXPECT_THROW(gs::decode_status(other), std::runtime_error);
}

TEST(StatusCache, OnlyASettledRunIsCached) {
  gs::RunStatus st = sample();
  EXPECT_TRUE(gs::status_is_settled(st));
  st.jobs[0].state = JobOutcome::Running;
  EXPECT_FALSE(gs::status_is_settled(st));
  st = sample();
  st.jobs[1].state = JobOutcome::Submitted;
  EXPECT_FALSE(gs::status_is_settled(st));
  st = sample();
  st.jobs[1].slurm_id = "42_1";
  EXPECT_FALSE(gs::status_is_settled(st));
  st = sample();
  st.slurm_queried = true;
  EXPECT_FALSE(gs::status_is_settled(st));
}
