// The run summary cache (run/run_summary.hpp): reused only while nothing of the run changed, never
// for a live run, never through something that is not its own folder.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gridrun/base/fs.hpp"
#include "gridrun/run/run_dir.hpp"
#include "gridrun/run/run_summary.hpp"

namespace fs = std::filesystem;
using namespace gridrun;

namespace {

struct FakeRun {
  fs::path root;
  run::RunDir dir;
  FakeRun()
      : root(fs::temp_directory_path() / ("gridrun-summary-test-" + std::to_string(::getpid()) + "-" +
                                          ::testing::UnitTest::GetInstance()->current_test_info()->name())),
        dir(root.string()) {
    fs::remove_all(root);
    for (const auto& d : {dir.jobs_dir(), dir.results_dir(), dir.logs_dir()}) fs::create_directories(d);
    base::write_file_atomic(dir.state_file(), "{}\n");
    base::write_file_atomic(dir.results_dir() + "/aaaaaaaaaaaa.h5", "results");
  }
  ~FakeRun() { fs::remove_all(root); }
  bool store(const base::Json& payload, bool live = false) {
    run::SummaryWriteOptions o;
    o.stamps_before = run::run_stamps(dir);
    o.live = live;
    return run::write_summary(dir, payload, o);
  }
};

const base::Json kRow = base::Json{{"jobs", 4}, {"done", 4}};

TEST(RunSummary, ReusedWhileNothingChanged) {
  FakeRun r;
  EXPECT_FALSE(run::read_current_summary(r.dir));
  ASSERT_TRUE(r.store(kRow));
  const auto got = run::read_current_summary(r.dir);
  ASSERT_TRUE(got);
  EXPECT_EQ(*got, kRow);
}

TEST(RunSummary, StaleAfterAnyChange) {
  {
    FakeRun r;  // state.json rewritten
    ASSERT_TRUE(r.store(kRow));
    base::write_file_atomic(r.dir.state_file(), "{\"jobs\": {}}\n");
    EXPECT_FALSE(run::read_current_summary(r.dir));
  }
  {
    FakeRun r;  // a new results file
    ASSERT_TRUE(r.store(kRow));
    base::write_file_atomic(r.dir.results_dir() + "/bbbbbbbbbbbb.h5", "results");
    EXPECT_FALSE(run::read_current_summary(r.dir));
  }
  {
    FakeRun r;  // a results file truncated in place: no rename, only its own stat changes
    ASSERT_TRUE(r.store(kRow));
    fs::resize_file(r.dir.results_dir() + "/aaaaaaaaaaaa.h5", 3);
    EXPECT_FALSE(run::read_current_summary(r.dir));
  }
  {
    FakeRun r;  // a new job file
    ASSERT_TRUE(r.store(kRow));
    base::write_file_atomic(r.dir.jobs_dir() + "/aaaaaaaaaaaa.json", "{}");
    EXPECT_FALSE(run::read_current_summary(r.dir));
  }
}

TEST(RunSummary, ChangedWhileComputedIsNotStored) {
  FakeRun r;
  run::SummaryWriteOptions o;
  o.stamps_before = run::run_stamps(r.dir);
  base::write_file_atomic(r.dir.state_file(), "{\"changed\": 1}\n");  // a writer, meanwhile
  EXPECT_FALSE(run::write_summary(r.dir, kRow, o));
  EXPECT_FALSE(run::read_current_summary(r.dir));
}

TEST(RunSummary, LiveRunIsNeverStored) {
  FakeRun r;
  EXPECT_FALSE(r.store(kRow, true));
  EXPECT_FALSE(fs::exists(r.dir.summary_file()));
}

TEST(RunSummary, DamagedOrForeignCacheIsIgnored) {
  {
    FakeRun r;
    ASSERT_TRUE(r.store(kRow));
    std::ofstream(r.dir.summary_file()) << "{ not json";
    EXPECT_FALSE(run::read_current_summary(r.dir));
    EXPECT_TRUE(r.store(kRow));  // replaced by the next write
    EXPECT_TRUE(run::read_current_summary(r.dir));
  }
  {
    FakeRun r;  // a link in place of .cache/: nothing written through it
    const fs::path elsewhere = r.root.string() + "-elsewhere";
    fs::create_directories(elsewhere);
    fs::create_directory_symlink(elsewhere, r.dir.cache_dir());
    EXPECT_FALSE(r.store(kRow));
    EXPECT_TRUE(fs::is_empty(elsewhere));
    fs::remove_all(elsewhere);
  }
}

}  // namespace

// A binary cache kept with the results folder's entries (the status cache) tells which results
// files changed when nothing else did; anything else changed is no answer at all.
TEST(RunSummary, CacheNamesTheResultsFilesThatChanged) {
  auto store = [](const FakeRun& r) {
    run::SummaryWriteOptions o;
    o.stamps_before = run::run_stamps(r.dir);
    o.keep_results_entries = true;
    return run::write_cache(r.dir, "status", "payload", o);
  };
  const std::string a = "aaaaaaaaaaaa.h5", b = "bbbbbbbbbbbb.h5";
  {
    FakeRun r;
    base::write_file_atomic(r.dir.results_dir() + "/" + b, "results");
    ASSERT_TRUE(store(r));
    auto got = run::read_cache_changes(r.dir, "status");
    ASSERT_TRUE(got);
    EXPECT_EQ(got->payload, "payload");
    EXPECT_TRUE(got->changed.empty());  // current
    EXPECT_EQ(got->stamps_now, run::run_stamps(r.dir));
    base::write_file_atomic(r.dir.results_dir() + "/" + b, "rewritten");  // renamed over
    fs::resize_file(r.dir.results_dir() + "/" + a, 3);                    // changed in place
    got = run::read_cache_changes(r.dir, "status");
    ASSERT_TRUE(got);
    EXPECT_EQ(got->changed, (std::vector<std::string>{a, b}));
    EXPECT_EQ(got->payload, "payload");
    EXPECT_FALSE(run::read_current_cache(r.dir, "status"));  // not current, for the other callers
  }
  for (int what = 0; what < 3; ++what) {
    FakeRun r;
    ASSERT_TRUE(store(r));
    if (what == 0) base::write_file_atomic(r.dir.results_dir() + "/" + b, "results");  // a file added
    if (what == 1) fs::remove(r.dir.results_dir() + "/" + a);                          // one removed
    if (what == 2) base::write_file_atomic(r.dir.state_file(), "{\"jobs\": {}}\n");    // state.json
    EXPECT_FALSE(run::read_cache_changes(r.dir, "status")) << what;
  }
  {
    FakeRun r;  // stored without the entries: only "current" can be told
    run::SummaryWriteOptions o;
    o.stamps_before = run::run_stamps(r.dir);
    ASSERT_TRUE(run::write_cache(r.dir, "report", "payload", o));
    ASSERT_TRUE(run::read_cache_changes(r.dir, "report"));
    fs::resize_file(r.dir.results_dir() + "/" + a, 3);
    EXPECT_FALSE(run::read_cache_changes(r.dir, "report"));
  }
}

// The results folder's own caches of its files (the index readers rewrite, the journal they and
// the writers append to) and the folder's own mtime change no answer: a command that brought the
// index up to date keeps the caches current.
TEST(RunSummary, TheResultsIndexAndJournalChangeNoStamp) {
  FakeRun r;
  const std::string before = run::run_stamps(r.dir);
  base::write_file_atomic(r.dir.results_dir() + "/" + run::RunDir::kResultsIndexName, "index");
  base::write_file_atomic(r.dir.results_dir() + "/" + run::RunDir::kResultsJournalName, "journal");
  EXPECT_EQ(run::run_stamps(r.dir), before);
  base::write_file_atomic(r.dir.results_dir() + "/bbbbbbbbbbbb.h5", "results");
  EXPECT_NE(run::run_stamps(r.dir), before);
}

// `gridrun run` rewrites results.h5 from the job files it read for its closing report, and caches
// that report under the stamps after the rewrite only when nothing else changed meanwhile.
TEST(RunSummary, SameButIndexTellsTheIndexRewriteFromAnyOtherChange) {
  FakeRun r;
  const run::RunStampParts before = run::run_stamp_parts(r.dir);
  base::write_file_atomic(r.dir.index_file(), "index");
  const run::RunStampParts indexed = run::run_stamp_parts(r.dir);
  EXPECT_NE(indexed.text(), before.text());
  EXPECT_TRUE(run::same_but_index(before, indexed));
  base::write_file_atomic(r.dir.results_dir() + "/bbbbbbbbbbbb.h5", "results");
  EXPECT_FALSE(run::same_but_index(indexed, run::run_stamp_parts(r.dir))) << "a new results file";
  const run::RunStampParts more = run::run_stamp_parts(r.dir);
  base::write_file_atomic(r.dir.state_file(), "{\"jobs\": {}}\n");
  EXPECT_FALSE(run::same_but_index(more, run::run_stamp_parts(r.dir))) << "state.json rewritten";
}
