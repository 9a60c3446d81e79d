// A writer process killed with SIGKILL after it reported a flush: its .partial must hold exactly
// the flushed rows (gridrun's reader here; h5py in test_schema.py). Synchronised on the child's
// "flushed N rows" line read through a pipe.
#include <gtest/gtest.h>

#include <signal.h>
#include <sys/wait.h>

#include <filesystem>

#include "gridrun/results/reader.hpp"
#include "gridrun/results/writer.hpp"
#include "test_util.hpp"

using namespace gridrun::results;
using gridrun::results::testing::Child;
using gridrun::results::testing::TempDir;

TEST(Kill, PartialFileHoldsFlushedRows) {
  TempDir dir;
  Child c({TESTWRITER, "live", dir.path(), "k1", "25"});
  ASSERT_EQ(c.line(), "flushed 25 rows");
  // Live: readable through SWMR while the writer holds it.
  EXPECT_EQ(read_job(dir / "k1.h5.partial").steps.rows, 25u);
  c.signal(SIGUSR1);
  ASSERT_EQ(c.line(), "flushed 53 rows");  // 25 + 3 unflushed + 25
  c.signal(SIGKILL);
  int st = c.wait();
  ASSERT_TRUE(WIFSIGNALED(st));
  JobData j = read_job(dir / "k1.h5.partial");
  EXPECT_EQ(j.status, "running");
  ASSERT_EQ(j.steps.rows, 53u);
  EXPECT_EQ(j.steps.columns.at("step").back(), 52);
  EXPECT_EQ(j.epochs.rows, 2u);
  // The killed file left "open for writing" flags: resuming clears them and continues.
  JobFileInfo info;
  info.id = "k1";
  info.ranks = 2;
  info.resume_from_step = 50;
  info.flush_interval_s = 0;
  auto w = JobWriter::create(dir.path(), info);
  StepRow r;
  r.step = 50;
  r.rank_step_s = {0.1, 0.1};
  w->append_step(r);
  w->finish(Status::Completed, "done", {});
  JobData done = read_job(dir / "k1.h5");
  EXPECT_EQ(done.status, "completed");
  EXPECT_EQ(done.steps.rows, 51u);
}

TEST(Kill, SigtermFinishesAsInterrupted) {
  TempDir dir;
  Child c({TESTWRITER, "live", dir.path(), "k2", "5"});
  ASSERT_EQ(c.line(), "flushed 5 rows");
  c.signal(SIGTERM);
  EXPECT_EQ(c.line(), "finished " + (dir / "k2.h5"));
  c.wait();
  JobData j = read_job(dir / "k2.h5");
  EXPECT_EQ(j.status, "interrupted");
  EXPECT_EQ(j.steps.rows, 8u);  // finish() writes the 3 buffered rows too
}
