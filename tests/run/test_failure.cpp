// A failed job's one-line reason (run/failure.hpp): the runner's own line picked out of Open MPI's
// banners, the last attempt's only, warnings and doubled prefixes left out, the results file's
// exit_reason first, and a pointer to the log when nothing names a reason.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gridrun/run/failure.hpp"
#include "gridrun/run/run_dir.hpp"

namespace fs = std::filesystem;
using gridrun::run::failure_reason;
using gridrun::run::reason_from_log;
using gridrun::run::recorded_failure_reason;
using gridrun::run::RunDir;

namespace {

// What an attempt of a job that exited 2 leaves in logs/<id>.err: gridrun's header, Open MPI's
// binding line, the runner's line, then Open MPI's banners.
const char* const kBadDataAttempt =
    "=== gridrun attempt 1 at 1795666398: mpirun -np 1 gridrun-train --job j.json\n"
    "[vm:25682] MCW rank 0 bound to socket 0[core 1[hwt 0]]: [./B]\n"
    "gridrun-train: rank 0 (vm): missing data file /x/data_batch_1.bin (expected the CIFAR-10 binary)\n"
    "--------------------------------------------------------------------------\n"
    "Primary job  terminated normally, but 1 process returned\n"
    "a non-zero exit code. Per user-direction, the job has been aborted.\n"
    "--------------------------------------------------------------------------\n"
    "mpirun detected that one or more processes exited with non-zero status, thus causing\n"
    "  Exit code:    2\n"
    "--------------------------------------------------------------------------\n";

}  // namespace

TEST(FailureReason, TheRunnersLineWithoutMpiBanners) {
  EXPECT_EQ(reason_from_log(kBadDataAttempt),
            "rank 0 (vm): missing data file /x/data_batch_1.bin (expected the CIFAR-10 binary)");
}

TEST(FailureReason, TheLastAttemptOnly) {
  // A later attempt that crashed without a line of its own has no reason: the earlier one's is not it.
  const std::string two = std::string(kBadDataAttempt) + "=== gridrun attempt 2 at 1795666401: mpirun\n" +
                          "mpirun noticed that process rank 0 exited on signal 9 (Killed).\n";
  EXPECT_EQ(reason_from_log(two), "");
  const std::string again = two + "=== gridrun attempt 3 at 1795666409: mpirun\n" +
                            "gridrun-train: rank 0 (vm): runtime failure: checkpoint c: cannot write\n";
  EXPECT_EQ(reason_from_log(again), "rank 0 (vm): runtime failure: checkpoint c: cannot write");
}

TEST(FailureReason, DoubledPrefixWarningsAndGridrunsOwnLines) {
  EXPECT_EQ(reason_from_log("gridrun-train: gridrun-train: device=gpu needs the NCCL communicator\n"),
            "device=gpu needs the NCCL communicator");
  // A warning is not why the job ended; the last line that is not one is.
  EXPECT_EQ(reason_from_log("gridrun-train: unknown model 'x'\n"
                            "gridrun-train: warning: checkpoint c is damaged; moved to c.damaged\n"),
            "unknown model 'x'");
  // gridrun's own lines in the log (the watchdog, a launch that failed) name the reason too.
  EXPECT_EQ(reason_from_log("gridrun-train: step 3\ngridrun: watchdog: no heartbeat from rank 0 for 15m\n"),
            "watchdog: no heartbeat from rank 0 for 15m");
  // Lines that merely mention the program, and empty ones, are not the runner's.
  EXPECT_EQ(reason_from_log("mpirun: gridrun-train: x\ngridrun-train:   \r\n"), "");
  EXPECT_EQ(reason_from_log("gridrun-train: bad \x01 byte\r\n"), "bad ? byte");
  EXPECT_EQ(reason_from_log(""), "");
}

TEST(FailureReason, ResultsFileFirstThenLogThenAPointerToTheLog) {
  const fs::path root = fs::temp_directory_path() / ("gridrun-failure-test-" + std::to_string(::getpid()));
  fs::remove_all(root);
  const RunDir dir(root.string());
  dir.create_layout();
  EXPECT_EQ(failure_reason(dir, "a1", ""), "no reason recorded; see " + dir.log_err("a1"));
  EXPECT_EQ(recorded_failure_reason(dir, "a1", ""), "");
  std::ofstream(dir.log_err("a1")) << kBadDataAttempt;
  EXPECT_EQ(failure_reason(dir, "a1", ""),
            "rank 0 (vm): missing data file /x/data_batch_1.bin (expected the CIFAR-10 binary)");
  EXPECT_EQ(failure_reason(dir, "a1", "missing data file /x/data_batch_1.bin\n(expected...)"),
            "missing data file /x/data_batch_1.bin (expected...)");
  EXPECT_EQ(failure_reason(dir, "a1", "gridrun-train: device=gpu needs NCCL"), "device=gpu needs NCCL");
  // A log of megabytes: its tail is read, from a line start.
  {
    std::ofstream big(dir.log_err("b2"));
    big << "gridrun-train: an old attempt's line\n";
    for (int i = 0; i < 20000; ++i) big << "rank 0 step " << i << " loss 0.5 and some padding\n";
    big << "gridrun-train: rank 1 (vm): runtime failure: out of memory\n";
  }
  EXPECT_EQ(failure_reason(dir, "b2", ""), "rank 1 (vm): runtime failure: out of memory");
  fs::remove_all(root);
}
