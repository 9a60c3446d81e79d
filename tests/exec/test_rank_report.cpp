// The other ranks' reports of a command job (exec/rank_report.hpp): what rank 0 reads back of what
// ranks > 0 wrote, lines that arrive in pieces, another launch's files, bad lines, a FIFO or a link
// in their place, and the bound on what is held.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "rank_report.hpp"

namespace gridrun::exec {
namespace {

namespace fs = std::filesystem;

class RankReport : public ::testing::Test {
 protected:
  void SetUp() override {
    work_ = (fs::temp_directory_path() / ("gridrun-rank-report-" + std::to_string(::getpid()) + "-" +
                                          ::testing::UnitTest::GetInstance()->current_test_info()->name()))
                .string();
    fs::remove_all(work_);
    fs::create_directories(work_);
  }
  void TearDown() override { fs::remove_all(work_); }
  void append(const std::string& file, const std::string& text) {
    std::ofstream(file, std::ios::app) << text;
  }
  std::string work_;
};

TEST_F(RankReport, RankZeroReadsWhatTheOtherRanksWrote) {
  const std::string dir = rank_report_dir(work_, true), key = launch_key(1700000000.25, 0);
  ASSERT_EQ(dir, work_ + "/.ranks");
  EXPECT_EQ(key, "1700000000.250000");
  RankReportReader reader(dir, key, 3);
  RankReportWriter w1(dir, key, 1), w2(dir, key, 2);
  w1.step(1, std::nan(""));
  w1.step(2, 0.125);
  w1.util(97.5, 123456789);
  reader.poll();
  EXPECT_TRUE(reader.complete(2));   // rank 2 has reported no step: not waited for
  EXPECT_FALSE(reader.complete(3));  // rank 1 has not reached step 3
  w2.step(2, 0.25);
  reader.poll();
  EXPECT_TRUE(reader.complete(1));  // rank 2 skipped step 1: it has passed it
  EXPECT_TRUE(reader.complete(2));
  EXPECT_FALSE(reader.complete(3));
  ASSERT_TRUE(reader.step_s(1, 1));
  EXPECT_TRUE(std::isnan(*reader.step_s(1, 1)));
  EXPECT_DOUBLE_EQ(*reader.step_s(1, 2), 0.125);
  EXPECT_DOUBLE_EQ(*reader.step_s(2, 2), 0.25);
  EXPECT_FALSE(reader.step_s(2, 1));
  EXPECT_FALSE(reader.step_s(0, 2));  // rank 0 reports nothing here
  EXPECT_DOUBLE_EQ(reader.util(1).first, 97.5);
  EXPECT_DOUBLE_EQ(reader.util(1).second, 123456789);
  EXPECT_TRUE(std::isnan(reader.util(2).first));
  reader.drop_through(2);
  EXPECT_FALSE(reader.step_s(1, 2));
  w2.step(3, 0.5);
  w1.step(3, 0.5);
  reader.poll();  // only what was appended since
  EXPECT_TRUE(reader.complete(3));
}

TEST_F(RankReport, ALineInPiecesIsReadWhenWhole) {
  const std::string dir = rank_report_dir(work_, true), key = launch_key(0, 41234);
  EXPECT_EQ(key, "port-41234");
  RankReportReader reader(dir, key, 2);
  reader.poll();  // no file yet: nothing, no error
  append(dir + "/" + key + ".1", "s 6 0.25\ns 7 0.");
  reader.poll();
  EXPECT_FALSE(reader.complete(7));
  EXPECT_FALSE(reader.step_s(1, 7));
  append(dir + "/" + key + ".1", "5\n");
  reader.poll();
  ASSERT_TRUE(reader.complete(7));
  EXPECT_DOUBLE_EQ(*reader.step_s(1, 7), 0.5);
}

TEST_F(RankReport, AnotherLaunchsFilesAreRemovedAndNeverRead) {
  const std::string dir = rank_report_dir(work_, true);
  append(dir + "/1.000000.1", "s 1 9\n");
  RankReportReader reader(dir, "2.000000", 2);
  EXPECT_FALSE(fs::exists(dir + "/1.000000.1"));
  reader.poll();
  EXPECT_FALSE(reader.step_s(1, 1));
}

TEST_F(RankReport, BadLinesAreSkipped) {
  const std::string dir = rank_report_dir(work_, true);
  RankReportReader reader(dir, "k", 2);
  append(dir + "/k.1",
         "s\ns x 1\ns 1 2 3\nu 1\nx 1 2\ns -4 1\ns 1e300 1\n" + std::string(5000, 's') + " 9 9\ns 9 0.75\n");
  reader.poll();
  EXPECT_FALSE(reader.step_s(1, -4));
  ASSERT_TRUE(reader.step_s(1, 9));
  EXPECT_DOUBLE_EQ(*reader.step_s(1, 9), 0.75);
  EXPECT_TRUE(std::isnan(reader.util(1).first));
}

TEST_F(RankReport, WhatIsHeldIsBounded) {
  const std::string dir = rank_report_dir(work_, true);
  RankReportReader reader(dir, "k", 2);
  std::string text;
  for (std::size_t s = 1; s <= RankReportReader::kMaxHeld + 100; ++s)
    text += "s " + std::to_string(s) + " 1\n";
  append(dir + "/k.1", text);
  for (int i = 0; i < 4; ++i) reader.poll();
  EXPECT_FALSE(reader.step_s(1, 1));  // the oldest went first
  EXPECT_TRUE(reader.step_s(1, RankReportReader::kMaxHeld + 100));
}

TEST_F(RankReport, AFifoInPlaceOfARanksFileNeverBlocks) {
  const std::string dir = rank_report_dir(work_, true);
  ASSERT_EQ(::mkfifo((dir + "/k.1").c_str(), 0600), 0);
  RankReportReader reader(dir, "k", 2);
  reader.poll();  // refused at once (a FIFO is no regular file)
  EXPECT_FALSE(reader.step_s(1, 1));
  EXPECT_THROW(RankReportWriter(dir, "k", 1), std::runtime_error);
}

TEST_F(RankReport, ALinkInPlaceOfTheFolderIsNeverFollowed) {
  const std::string outside = work_ + "/outside";
  fs::create_directories(outside);
  append(outside + "/keep", "x");
  fs::create_directory_symlink(outside, work_ + "/.ranks");
  EXPECT_EQ(rank_report_dir(work_, false), "");  // a rank > 0 reports nothing through it
  EXPECT_TRUE(fs::is_symlink(work_ + "/.ranks"));
  const std::string dir = rank_report_dir(work_, true);  // rank 0 replaces it with a folder
  EXPECT_EQ(dir, work_ + "/.ranks");
  EXPECT_FALSE(fs::is_symlink(dir));
  RankReportReader reader(dir, "k", 2);
  EXPECT_TRUE(fs::exists(outside + "/keep"));
}

}  // namespace
}  // namespace gridrun::exec
