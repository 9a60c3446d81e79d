// The run directory module: every path from one place, state.json written and read back by its one
// reader (phase facts included, older phase figures tolerated), a damaged state named, the lock
// exclusive, and prepare_run rewriting a damaged job file from the grid.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <sstream>
#include <vector>

#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/host.hpp"
#include "gridrun/jobs/grid.hpp"
#include "gridrun/jobs/job.hpp"
#include "gridrun/run/exit_codes.hpp"
#include "gridrun/run/prepare.hpp"
#include "gridrun/run/run_dir.hpp"

namespace fs = std::filesystem;
using namespace gridrun;

namespace {

struct TempDir {
  fs::path path;
  TempDir() {
    path = fs::temp_directory_path() / ("gridrun-run-test-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

}  // namespace

TEST(RunDir, PathsComeFromTheRoot) {
  const run::RunDir rd("/r/x/");
  EXPECT_EQ(rd.root(), "/r/x");
  EXPECT_EQ(rd.job_file("a1"), "/r/x/jobs/a1.json");
  EXPECT_EQ(rd.result_file("a1"), "/r/x/results/a1.h5");
  EXPECT_EQ(rd.partial_file("a1"), "/r/x/results/a1.h5.partial");
  EXPECT_EQ(rd.checkpoint_dir("a1"), "/r/x/checkpoints/a1");
  EXPECT_EQ(rd.state_file(), "/r/x/state.json");
  EXPECT_EQ(rd.index_file(), "/r/x/results.h5");
  EXPECT_EQ(run::RunDir::for_grid("runs", "g").root(), "runs/g");
}

TEST(RunDir, FileNamesParseBackToTheirJobIds) {
  using run::RunDir;
  const RunDir rd("/r/x");
  EXPECT_EQ(RunDir::job_id_of_job_file(rd.job_file("a1")), "a1");
  EXPECT_EQ(RunDir::job_id_of_job_file("a1.json"), "a1");
  EXPECT_EQ(RunDir::job_id_of_job_file("a1.rankfile"), std::nullopt);
  EXPECT_EQ(RunDir::job_id_of_job_file(".json"), std::nullopt);
  EXPECT_EQ(RunDir::job_id_of_results_file(rd.result_file("a1")), "a1");
  EXPECT_EQ(RunDir::job_id_of_results_file(RunDir::partial_file_name("a1")), "a1");
  EXPECT_EQ(RunDir::job_id_of_results_file(RunDir::profile_trace_name("a1")), std::nullopt);
  EXPECT_EQ(RunDir::job_id_of_results_file(".gridrun-index"), std::nullopt);
  EXPECT_EQ(RunDir::job_id_of_results_file(".h5"), std::nullopt);
  EXPECT_TRUE(RunDir::is_partial_file(rd.partial_file("a1")));
  EXPECT_FALSE(RunDir::is_partial_file(RunDir::result_file_name("a1")));
  EXPECT_FALSE(RunDir::is_partial_file("notes.partial"));
}

TEST(RunDir, OfResultsDirIsItsParent) {
  EXPECT_EQ(run::RunDir::of_results_dir("/r/x/results").root(), "/r/x");
  EXPECT_EQ(run::RunDir::of_results_dir("/r/x/results/").root(), "/r/x");
  EXPECT_EQ(run::RunDir::of_results_dir("/r/x/results").checkpoint_dir("id"), "/r/x/checkpoints/id");
}

// A relative results folder: its parent lexically while it does not exist, as the OS resolves it
// once it does. Run from a fresh folder, so that a `results` folder where the test is started (a
// build tree has one) does not decide the answer.
TEST(RunDir, OfARelativeResultsDirIsItsParentFromTheWorkingDirectory) {
  TempDir t;
  // Back to the first folder however the test ends, before the temporary one is removed.
  struct WorkingDir {
    fs::path back = fs::current_path();
    ~WorkingDir() {
      std::error_code ec;
      fs::current_path(back, ec);
    }
  } restore;
  fs::current_path(t.path);
  EXPECT_EQ(run::RunDir::of_results_dir("results").root(), ".");
  fs::create_directory(t.path / "results");
  EXPECT_EQ(run::RunDir::of_results_dir("results").root(), fs::canonical(t.path).string());
}

TEST(RunDir, ExitCodesAreTheDocumentedOnes) {
  EXPECT_EQ(run::kExitCompleted, 0);
  EXPECT_EQ(run::kExitFailure, 1);
  EXPECT_EQ(run::kExitBadInput, 2);
  EXPECT_EQ(run::kExitInterrupted, 75);
}

TEST(RunState, RoundTripsJobsAndPhaseFacts) {
  TempDir t;
  const run::RunDir rd(t.path.string());
  run::RunState st;
  st.name = "g";
  run::JobRecord& r = st.jobs["0123456789ab"];
  r.id = "0123456789ab";
  r.state = run::JobOutcome::TargetReached;
  r.attempts = 2;
  r.exit_codes = {1, 0};
  r.start_unix = 10.5;
  r.end_unix = 12.25;
  r.host = "h";
  r.phase = "2";
  run::PhaseRecord& p = st.phases["2"];
  p.name = "2";
  p.makespan_s = 3.5;
  p.busy_resource_s = 7;
  p.capacity = 2;
  p.jobs = {"0123456789ab"};
  rd.save_state(st);
  const run::RunState back = rd.load_state();
  EXPECT_EQ(back.name, "g");
  ASSERT_EQ(back.jobs.count("0123456789ab"), 1u);
  const run::JobRecord& b = back.jobs.at("0123456789ab");
  EXPECT_EQ(b.state, run::JobOutcome::TargetReached);
  EXPECT_EQ(b.attempts, 2);
  EXPECT_EQ(b.exit_codes, (std::vector<int>{1, 0}));
  EXPECT_DOUBLE_EQ(b.end_unix, 12.25);
  EXPECT_EQ(b.phase, "2");
  ASSERT_EQ(back.phases.count("2"), 1u);
  const run::PhaseRecord& q = back.phases.at("2");
  EXPECT_DOUBLE_EQ(q.makespan_s, 3.5);
  EXPECT_DOUBLE_EQ(q.busy_resource_s, 7);
  EXPECT_DOUBLE_EQ(q.capacity, 2);
  EXPECT_EQ(q.jobs, (std::vector<std::string>{"0123456789ab"}));
  // What was saved is what was loaded (a phase's unknown figures, NaN, equal too): a run that
  // changes nothing writes no state.json (RunLoop::save_state).
  EXPECT_TRUE(std::isnan(q.other_cpu_share));
  EXPECT_TRUE(back == st);
  run::RunState other = back;
  other.jobs.at("0123456789ab").attempts = 3;
  EXPECT_FALSE(other == st);
  other = back;
  other.phases.at("2").other_cpu_share = 0.1;
  EXPECT_FALSE(other == st);
  other = back;
  other.overrides = {"lr=0.1"};
  EXPECT_FALSE(other == st);
  other = back;
  other.warnings = {"never saved"};
  EXPECT_TRUE(other == st);
}

// Issue 57: an id read from state.json names the job's files (logs/<id>.out.heartbeat, ...); one
// that is not a job id is left out with a warning naming the file, never used as a path.
TEST(RunState, RecordsOfFollowTheIdsAndAddTheMissing) {
  run::RunState s;
  s.jobs["bbbb"].id = "bbbb";
  s.jobs["bbbb"].attempts = 3;
  s.jobs["zzzz"].id = "zzzz";
  const std::vector<std::string> ids = {"cccc", "bbbb", "aaaa", "bbbb"};
  const std::vector<run::JobRecord*> recs = run::records_of(s, ids);
  ASSERT_EQ(recs.size(), ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) {
    ASSERT_NE(recs[i], nullptr);
    EXPECT_EQ(recs[i]->id, ids[i]);
    EXPECT_EQ(recs[i], &s.jobs.at(ids[i]));
  }
  EXPECT_EQ(recs[1]->attempts, 3);  // an existing record is kept, not replaced
  EXPECT_EQ(recs[0]->attempts, 0);
  EXPECT_EQ(s.jobs.size(), 4u);  // aaaa, bbbb, cccc and the other job's zzzz
}

TEST(RunState, IdThatIsNotAJobIdIsSkippedWithAWarning) {
  TempDir t;
  const run::RunDir rd(t.path.string());
  base::write_file_atomic(rd.state_file(),
                          R"({"name":"g","jobs":{"../../../../tmp/x":{"state":"running"},)"
                          R"("0123456789ab":{"state":"completed"},"ABCDEF012345":{"state":"running"}}})");
  const run::RunState st = rd.load_state();
  ASSERT_EQ(st.jobs.size(), 1u);
  EXPECT_EQ(st.jobs.count("0123456789ab"), 1u);
  ASSERT_EQ(st.warnings.size(), 2u);
  EXPECT_EQ(
      st.warnings[0],
      rd.state_file() + ": job id '../../../../tmp/x' is not a job id (12 lowercase hex digits); skipped");
  EXPECT_NE(st.warnings[1].find("'ABCDEF012345' is not a job id"), std::string::npos);
}

// Issue 57: a FIFO or a link in state.json's place is a damaged state file, named at once (it used
// to block every command in open()); the lock and the launch token are read the same way.
TEST(RunState, FifoOrLinkInPlaceOfStateIsNamedNotWaitedFor) {
  TempDir t;
  const run::RunDir rd(t.path.string());
  ASSERT_EQ(::mkfifo(rd.state_file().c_str(), 0600), 0);
  try {
    rd.load_state();
    FAIL() << "a FIFO as state.json was read";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(
        std::string(e.what()),
        rd.state_file() + ": not read as a state file (a regular file of at most 256 MiB): it is a FIFO");
  }
  fs::remove(rd.state_file());
  fs::create_symlink("/dev/zero", rd.state_file());
  EXPECT_THROW(rd.load_state(), std::runtime_error);
  ASSERT_EQ(::mkfifo(rd.launch_token_file().c_str(), 0600), 0);
  EXPECT_EQ(rd.launch_token(), "");
  ASSERT_EQ(::mkfifo(rd.lock_file().c_str(), 0600), 0);
  EXPECT_EQ(run::lock_holder(rd), std::nullopt);
  EXPECT_THROW(run::RunLock lock(rd), std::runtime_error);
}

TEST(RunState, OlderPhaseFiguresLeaveMissingFactsNaN) {
  TempDir t;
  const run::RunDir rd(t.path.string());
  base::write_file_atomic(
      rd.state_file(),
      R"({"name":"g","jobs":{},"phases":{"1":{"makespan_s":4,"samples_per_s":9,"jobs":["a"]}}})");
  const run::RunState st = rd.load_state();
  const run::PhaseRecord& p = st.phases.at("1");
  EXPECT_DOUBLE_EQ(p.makespan_s, 4);
  EXPECT_TRUE(std::isnan(p.busy_resource_s));
  EXPECT_EQ(p.jobs, (std::vector<std::string>{"a"}));
}

TEST(RunState, DamagedStateNamesTheFile) {
  TempDir t;
  const run::RunDir rd(t.path.string());
  base::write_file_atomic(rd.state_file(), R"({"jobs":{"0123456789ab":{"state":"exploded"}}})");
  try {
    rd.load_state();
    FAIL() << "a state of an unknown outcome was accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(rd.state_file()), std::string::npos) << e.what();
  }
  base::write_file_atomic(rd.state_file(), "{not json");
  EXPECT_THROW(rd.load_state(), std::exception);
}

TEST(RunState, NoFileIsAnEmptyState) {
  TempDir t;
  EXPECT_TRUE(run::RunDir(t.path.string()).load_state().jobs.empty());
}

TEST(RunLock, SecondHolderIsRefusedWithThePid) {
  TempDir t;
  const run::RunDir rd(t.path.string());
  run::RunLock first(rd);
  try {
    run::RunLock second(rd);
    FAIL() << "the run was locked twice";
  } catch (const run::RunLocked& e) {
    EXPECT_EQ(e.pid(), static_cast<long>(::getpid()));
  }
}

// The lock file names its holder with its start, which `gridrun cancel` checks against the PID's.
TEST(RunLock, RecordsPidHostAndStart) {
  TempDir t;
  const run::RunDir rd(t.path.string());
  EXPECT_FALSE(run::lock_holder(rd));
  {
    run::RunLock lock(rd);
    const auto h = run::lock_holder(rd);
    ASSERT_TRUE(h);
    EXPECT_EQ(h->pid, static_cast<long>(::getpid()));
    EXPECT_EQ(h->host, base::hostname());
    EXPECT_EQ(h->start_ticks, base::start_ticks(::getpid()).value());
  }
  EXPECT_FALSE(run::lock_holder(rd));  // let go
}

// One secret per sitting, readable by its owner only; anything else in the file is no token.
TEST(LaunchToken, RenewedPrivateAndValidated) {
  TempDir t;
  const run::RunDir rd(t.path.string());
  EXPECT_EQ(rd.launch_token(), "");
  const std::string a = rd.renew_launch_token();
  EXPECT_EQ(a.size(), 32u);
  EXPECT_EQ(a.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_EQ(rd.launch_token(), a);
  EXPECT_EQ(fs::status(rd.launch_token_file()).permissions() & fs::perms::all,
            fs::perms::owner_read | fs::perms::owner_write);
  const std::string b = rd.renew_launch_token();
  EXPECT_NE(a, b);
  EXPECT_EQ(rd.launch_token(), b);
  for (const std::string& bad :
       std::vector<std::string>{"", "xyz", std::string(32, 'G'), std::string(31, 'a'), b + "0"}) {
    base::write_file_atomic(rd.launch_token_file(), bad + "\n");
    EXPECT_EQ(rd.launch_token(), "") << bad;
  }
}

TEST(Outcomes, MapResultsStatusAndRoundTripNames) {
  EXPECT_EQ(run::outcome_from_results("target_reached"), run::JobOutcome::TargetReached);
  EXPECT_EQ(run::outcome_from_results(""), run::JobOutcome::Pending);
  EXPECT_TRUE(run::is_finished(run::JobOutcome::Completed));
  EXPECT_FALSE(run::is_finished(run::JobOutcome::Failed));
  EXPECT_TRUE(run::is_queued(run::JobOutcome::Submitted));
  for (auto o : {run::JobOutcome::Pending, run::JobOutcome::Interrupted, run::JobOutcome::Submitted})
    EXPECT_EQ(run::job_outcome_from_string(run::to_string(o)), o);
  EXPECT_THROW(run::job_outcome_from_string("nope"), std::invalid_argument);
}

TEST(PrepareRun, RewritesADamagedJobFileFromTheGrid) {
  TempDir t;
  const fs::path grid = t.path / "g.yaml";
  base::write_file_atomic(grid.string(),
                          "name: g\ngrid:\n  model: [mlp]\n  dataset: [synthetic]\n  ranks: [1, 2]\n"
                          "compare:\n  by: ranks\n");
  const jobs::Expansion ex = jobs::load_grid(grid.string());
  ASSERT_EQ(ex.jobs.size(), 2u);
  const run::RunDir rd = run::RunDir::for_grid((t.path / "runs").string(), ex.name);
  std::ostringstream log;
  run::PrepareOptions po;
  po.grid_file = grid.string();
  run::prepare_run(rd, ex, po, log);
  for (const auto& j : ex.jobs) jobs::write_job_file(rd.job_file(j.id), j);
  base::write_file_atomic(rd.job_file(ex.jobs[0].id), "{damaged");
  const run::PreparedRun p = run::prepare_run(rd, ex, po, log);
  EXPECT_NE(log.str().find(rd.job_file(ex.jobs[0].id)), std::string::npos) << log.str();
  const jobs::Job back = jobs::read_job_file(rd.job_file(ex.jobs[0].id));
  EXPECT_EQ(back.id, ex.jobs[0].id);
  EXPECT_EQ(p.state.jobs.size(), 2u);
  EXPECT_FALSE(p.state.jobs.at(ex.jobs[1].id).phase.empty());
  EXPECT_EQ(base::read_file(rd.grid_copy(), base::kinds::kGridCopy),
            base::read_file(grid.string(), base::kinds::kGridFile));
}
