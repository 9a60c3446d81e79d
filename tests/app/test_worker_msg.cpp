// `gridrun worker-msg` (app/cmd_worker_msg.cpp), the Slurm task body's end of the warm worker's
// channel, against the C++ ends (run/worker_channel.hpp: the local launcher and the ranks): a task
// line it writes decodes to the same task, odd paths included; a done line the ranks encode is
// `continue` or `retiring`, and anything that is not that job's with its ticket exits 1. Also
// `gridrun job-shape`, the task body's other helper.
//   test_app_worker_msg GRIDRUN
#include <gtest/gtest.h>

#include <unistd.h>

#include <cstdio>
#include <string>
#include <vector>

#include "gridrun/base/spawn.hpp"
#include "gridrun/jobs/job.hpp"
#include "gridrun/run/worker_channel.hpp"

using namespace gridrun;

namespace {

struct Binary {
  std::string gridrun;  // argv[1]
};
Binary& binary() {
  static Binary b;  // set once by main, before any test
  return b;
}

// `gridrun worker-msg done ...` with `line` on its stdin.
base::CapturedRun check_done(const std::string& line, const std::string& job, const std::string& ticket) {
  return base::run_captured({"/bin/sh", "-c",
                             "printf '%s\\n' \"$1\" | \"$0\" worker-msg done --job \"$2\" --ticket \"$3\"",
                             binary().gridrun, line, job, ticket});
}

run::WorkerDone done_of(const std::string& job, const std::string& ticket, bool retiring) {
  run::WorkerDone d;
  d.job_id = job;
  d.ticket = ticket;
  d.retiring = retiring;
  d.code = 0;
  d.rss_bytes = 1.5e8;
  d.pid = 4242;
  return d;
}

const std::string kTicket = "0123456789abcdef0123456789abcdef";

}  // namespace

TEST(WorkerMsg, TaskLineDecodesToTheSameTask) {
  for (const std::string dir :
       {"/runs/plain", "/runs/with space/a \"quote\" and \\ backslash", "/runs/ünï"}) {
    for (const bool resume : {false, true}) {
      std::vector<std::string> argv = {binary().gridrun,
                                       "worker-msg",
                                       "task",
                                       "--job-file",
                                       dir + "/jobs/0123456789ab.json",
                                       "--launched-at",
                                       "1764441234.125",
                                       "--log-out",
                                       dir + "/logs/x.out",
                                       "--log-err",
                                       dir + "/logs/x.err",
                                       "--ticket",
                                       kTicket};
      if (resume) argv.push_back("--resume");
      const base::CapturedRun r = base::run_captured(argv);
      ASSERT_EQ(r.exit_code, 0) << r.err;
      ASSERT_FALSE(r.out.empty());
      EXPECT_EQ(r.out.back(), '\n') << "one line";
      EXPECT_EQ(r.out.find('\n'), r.out.size() - 1) << "one line";
      const run::WorkerTask t = run::decode_task(r.out.substr(0, r.out.size() - 1));
      EXPECT_EQ(t.job_file, dir + "/jobs/0123456789ab.json");
      EXPECT_EQ(t.resume, resume);
      EXPECT_DOUBLE_EQ(t.launched_at, 1764441234.125);
      EXPECT_EQ(t.heartbeat_file, "");
      EXPECT_EQ(t.log_out, dir + "/logs/x.out");
      EXPECT_EQ(t.log_err, dir + "/logs/x.err");
      EXPECT_EQ(t.ticket, kTicket);
      // The same line as the C++ launcher writes for the same task.
      EXPECT_EQ(r.out, run::encode(t));
    }
  }
}

TEST(WorkerMsg, TaskWithoutJobFileOrTicketIsBadInput) {
  const base::CapturedRun a =
      base::run_captured({binary().gridrun, "worker-msg", "task", "--ticket", kTicket});
  EXPECT_EQ(a.exit_code, 2);
  EXPECT_NE(a.err.find("--job-file"), std::string::npos) << a.err;
  const base::CapturedRun b =
      base::run_captured({binary().gridrun, "worker-msg", "task", "--job-file", "/j.json"});
  EXPECT_EQ(b.exit_code, 2);
  EXPECT_NE(b.err.find("--ticket"), std::string::npos) << b.err;
  const base::CapturedRun c = base::run_captured({binary().gridrun, "worker-msg", "both"});
  EXPECT_EQ(c.exit_code, 2);
}

TEST(WorkerMsg, DoneLineOfTheRanksSaysContinueOrRetiring) {
  std::string line = run::encode(done_of("0123456789ab", kTicket, false));
  line.pop_back();  // the '\n'
  base::CapturedRun r = check_done(line, "0123456789ab", kTicket);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "continue\n");
  line = run::encode(done_of("0123456789ab", kTicket, true));
  line.pop_back();
  r = check_done(line, "0123456789ab", kTicket);
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "retiring\n");
}

TEST(WorkerMsg, AnyOtherDoneLineExitsOneWithTheReason) {
  std::string other_ticket = run::encode(done_of("0123456789ab", "ffffffffffffffffffffffffffffffff", false));
  other_ticket.pop_back();
  std::string other_job = run::encode(done_of("ba9876543210", kTicket, false));
  other_job.pop_back();
  std::string cut = run::encode(done_of("0123456789ab", kTicket, false));
  cut.resize(cut.size() / 2);
  const std::string too_long = "{\"job\":\"0123456789ab\",\"pad\":\"" + std::string(5000, 'x') + "\"}";
  const std::vector<std::pair<std::string, std::string>> cases = {
      {other_ticket, "ticket"}, {other_job, "job"}, {cut, ""},
      {too_long, "longer"},     {"", ""},           {"not json", ""}};
  for (const auto& [line, why] : cases) {
    const base::CapturedRun r = check_done(line, "0123456789ab", kTicket);
    EXPECT_EQ(r.exit_code, 1) << line.substr(0, 80) << "\n" << r.err;
    EXPECT_EQ(r.out, "") << line.substr(0, 80);
    EXPECT_NE(r.err.find(why), std::string::npos) << r.err;
  }
}

// `gridrun job-shape` (issue 59): the Slurm task body reads a step's ranks, threads, nodes and planned
// GPUs and cores from the job file through it, not from text in the script or its list.
TEST(JobShape, PrintsTheJobFilesFootprintAndPlannedDevices) {
  char dir_template[] = "/tmp/gridrun-job-shape-XXXXXX";
  ASSERT_NE(::mkdtemp(dir_template), nullptr);
  const std::string dir = dir_template;
  jobs::JobParams p;
  p.ranks = 4;
  p.threads_per_rank = 2;
  p.nodes = 2;
  jobs::Job packed = jobs::make_job("shape", 0, p);
  packed.meta["planned_gpus"] = "0,1";
  packed.meta["planned_cores"] = "4,5";
  jobs::write_job_file(dir + "/packed.json", packed);
  jobs::write_job_file(dir + "/plain.json", jobs::make_job("shape", 1, jobs::JobParams{}));
  std::FILE* f = std::fopen((dir + "/not-a-job.json").c_str(), "w");
  ASSERT_NE(f, nullptr);
  std::fputs("{\"id\": 1}", f);
  std::fclose(f);

  auto shape = [&](const std::string& name) {
    return base::run_captured({binary().gridrun, "job-shape", dir + "/" + name});
  };
  const base::CapturedRun a = shape("packed.json"), b = shape("plain.json"), c = shape("not-a-job.json"),
                          d = shape("missing.json");
  EXPECT_EQ(a.exit_code, 0) << a.err;
  EXPECT_EQ(a.out, "4 2 2 0,1 4,5\n");
  EXPECT_EQ(b.exit_code, 0) << b.err;
  EXPECT_EQ(b.out, "1 1 1 - -\n");
  EXPECT_EQ(c.exit_code, 1);
  EXPECT_NE(c.err.find("not-a-job.json"), std::string::npos) << c.err;
  EXPECT_EQ(d.exit_code, 1);
  EXPECT_NE(d.err.find("missing.json"), std::string::npos) << d.err;
  for (const char* name : {"packed.json", "plain.json", "not-a-job.json"})
    std::remove((dir + "/" + name).c_str());
  ::rmdir(dir.c_str());
}

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  if (argc != 2) {
    std::fprintf(stderr, "usage: test_app_worker_msg GRIDRUN\n");
    return 2;
  }
  binary().gridrun = argv[1];
  return RUN_ALL_TESTS();
}
