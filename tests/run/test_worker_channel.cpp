// The warm worker's control channel (run/worker_channel.hpp): messages survive a round trip and a
// malformed one names its field; the launcher's pipes never block on open; a rank reads its own
// task pipe line by line, whole lines only, and reads end-of-file once the launcher closes it (how
// a worker learns that it is retired, or that its launcher died).
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "gridrun/run/worker_channel.hpp"

namespace fs = std::filesystem;
using namespace gridrun::run;

namespace {

fs::path scratch() {
  const fs::path d = fs::temp_directory_path() / ("gridrun-test-worker-" + std::to_string(::getpid()));
  fs::remove_all(d);
  return d;
}

TEST(WorkerChannel, MessagesRoundTrip) {
  WorkerTask t{
      "/r/jobs/abc.json", true,      1795747794.123456, "/r/logs/abc.out.heartbeat", "/r/logs/abc.out",
      "/r/logs/abc.err",  "0123abcd"};
  std::string line = encode(t);
  ASSERT_EQ(line.back(), '\n');
  line.pop_back();
  const WorkerTask u = decode_task(line);
  EXPECT_EQ(u.job_file, t.job_file);
  EXPECT_TRUE(u.resume);
  EXPECT_DOUBLE_EQ(u.launched_at, t.launched_at);
  EXPECT_EQ(u.heartbeat_file, t.heartbeat_file);
  EXPECT_EQ(u.log_out, t.log_out);
  EXPECT_EQ(u.log_err, t.log_err);
  EXPECT_EQ(u.ticket, "0123abcd");

  line = encode(WorkerDone{"abc", 0, 2.5e8, true, "0123abcd", 4321});
  line.pop_back();
  const WorkerDone d = decode_done(line);
  EXPECT_EQ(d.job_id, "abc");
  EXPECT_EQ(d.code, 0);
  EXPECT_DOUBLE_EQ(d.rss_bytes, 2.5e8);
  EXPECT_TRUE(d.retiring);
  EXPECT_EQ(d.ticket, "0123abcd");
  EXPECT_EQ(d.pid, 4321);
}

// Issue 57: a done message counts only from the worker's ranks, for its job, with its job's ticket.
TEST(WorkerChannel, ADoneMessageCountsOnlyWithItsJobsTicketFromItsRanks) {
  const std::string ticket = new_worker_ticket();
  ASSERT_EQ(ticket.size(), 32u);
  EXPECT_EQ(ticket.find_first_not_of("0123456789abcdef"), std::string::npos);
  EXPECT_NE(new_worker_ticket(), ticket);
  const std::vector<int> ranks{100, 101};
  EXPECT_EQ(check_done(WorkerDone{"aaaaaaaaaaaa", 0, 0, false, ticket, 100}, "aaaaaaaaaaaa", ticket, ranks),
            "");
  // Forged: the running job's id without its ticket (the finding), or an old job's ticket.
  EXPECT_NE(check_done(WorkerDone{"aaaaaaaaaaaa", 0, 0, false, "", 100}, "aaaaaaaaaaaa", ticket, ranks)
                .find("ticket"),
            std::string::npos);
  EXPECT_NE(check_done(WorkerDone{"aaaaaaaaaaaa", 0, 0, false, new_worker_ticket(), 100}, "aaaaaaaaaaaa",
                       ticket, ranks),
            "");
  // Another job's id with the right ticket, and a pid that is none of the worker's ranks.
  EXPECT_NE(check_done(WorkerDone{"bbbbbbbbbbbb", 0, 0, false, ticket, 100}, "aaaaaaaaaaaa", ticket, ranks)
                .find("bbbbbbbbbbbb"),
            std::string::npos);
  EXPECT_NE(check_done(WorkerDone{"aaaaaaaaaaaa", 0, 0, false, ticket, 999}, "aaaaaaaaaaaa", ticket, ranks)
                .find("pid 999"),
            std::string::npos);
  // A worker that was given no ticket believes nothing, not even an empty one.
  EXPECT_NE(check_done(WorkerDone{"aaaaaaaaaaaa", 0, 0, false, "", 100}, "aaaaaaaaaaaa", "", ranks), "");
  // Ranks not known (the Slurm task body's `gridrun worker-msg done`): any pid, the ticket decides.
  EXPECT_EQ(
      check_done(WorkerDone{"aaaaaaaaaaaa", 0, 0, false, ticket, 999}, "aaaaaaaaaaaa", ticket, std::nullopt),
      "");
  EXPECT_NE(
      check_done(WorkerDone{"aaaaaaaaaaaa", 0, 0, false, "", 999}, "aaaaaaaaaaaa", ticket, std::nullopt), "");
}

// Issue 57: 49 MiB without a line end were buffered whole; now a line past the cap is an error as
// soon as the cap is passed, and what was buffered is dropped.
TEST(WorkerChannel, ALineLongerThanTheCapIsAnErrorNotABuffer) {
  const fs::path dir = scratch();
  WorkerPipes launcher = make_worker_pipes(dir.string(), 1);
  WorkerInbox rank0 = open_worker_inbox(dir.string(), 0);
  // The longest line accepted, then one byte more with and without its line end.
  const std::string longest(kMaxDoneLineBytes, 'x');
  ASSERT_TRUE(rank0.done.write_line(longest + "\n"));
  EXPECT_EQ(launcher.done.read_line(0, nullptr).value_or("?").size(), kMaxDoneLineBytes);
  ASSERT_TRUE(rank0.done.write_line(longest + "y\n"));
  EXPECT_THROW(launcher.done.read_line(0, nullptr), std::runtime_error);
  // 48 KiB without a line end (more than a pipe holds at once is not needed to pass the cap).
  ASSERT_TRUE(rank0.done.write_line(std::string(48 * 1024, 'z')));
  try {
    launcher.done.read_line(0, nullptr);
    FAIL() << "an endless line was buffered";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(std::to_string(kMaxDoneLineBytes)), std::string::npos) << e.what();
  }
  // A task line may be longer (four paths), up to its own cap.
  ASSERT_TRUE(launcher.tasks[0].write_line(std::string(kMaxDoneLineBytes * 2, 't') + "\n"));
  EXPECT_EQ(rank0.task.read_line(1, nullptr).value_or("?").size(), kMaxDoneLineBytes * 2);
  fs::remove_all(dir);
}

TEST(WorkerChannel, MalformedMessagesNameTheField) {
  EXPECT_THROW(decode_task("not json"), std::runtime_error);
  try {
    decode_task(R"({"job":"x","resume":false,"heartbeat":"","log_out":"","log_err":""})");
    FAIL() << "no launched_at accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("'launched_at'"), std::string::npos) << e.what();
  }
  try {
    decode_done(R"({"job":"x","code":"zero","rss_bytes":0,"retiring":false})");
    FAIL() << "a text code accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("'code'"), std::string::npos) << e.what();
  }
  EXPECT_THROW(
      decode_task(R"({"job":"","resume":false,"launched_at":1,"heartbeat":"","log_out":"","log_err":""})"),
      std::runtime_error);
}

TEST(WorkerChannel, TaskLinesReachTheRankWholeAndEndOfFileEndsIt) {
  const fs::path dir = scratch();
  WorkerPipes launcher = make_worker_pipes(dir.string(), 2);
  ASSERT_EQ(launcher.tasks.size(), 2u);
  WorkerInbox rank1 = open_worker_inbox(dir.string(), 1);
  EXPECT_FALSE(rank1.done.open());  // only rank 0 reports
  WorkerInbox rank0 = open_worker_inbox(dir.string(), 0);
  ASSERT_TRUE(rank0.done.open());

  bool eof = true;
  EXPECT_FALSE(rank1.task.read_line(0, &eof));  // nothing sent yet: no line, not the end
  EXPECT_FALSE(eof);
  // A line written in two parts is read once, whole.
  ASSERT_TRUE(launcher.tasks[1].write_line("{\"a\":"));
  EXPECT_FALSE(rank1.task.read_line(0, &eof));
  ASSERT_TRUE(launcher.tasks[1].write_line("1}\nsecond\n"));
  EXPECT_EQ(rank1.task.read_line(1, &eof).value_or("?"), "{\"a\":1}");
  EXPECT_EQ(rank1.task.read_line(1, &eof).value_or("?"), "second");

  ASSERT_TRUE(rank0.done.write_line(encode(WorkerDone{"j", 0, 1, false, "t", 1})));
  const auto got = launcher.done.read_line(0, nullptr);
  ASSERT_TRUE(got);
  EXPECT_EQ(decode_done(*got).job_id, "j");

  launcher.tasks.clear();  // the launcher retires the worker
  EXPECT_FALSE(rank1.task.read_line(5, &eof));
  EXPECT_TRUE(eof);
  fs::remove_all(dir);
}

TEST(WorkerChannel, AMissingPipeNamesItsPath) {
  const fs::path dir = scratch();
  fs::create_directories(dir);
  try {
    open_worker_inbox(dir.string(), 3);
    FAIL() << "opened a pipe that does not exist";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("task.3"), std::string::npos) << e.what();
  }
  fs::remove_all(dir);
}

}  // namespace
