// Test-only helper: a real writer process that tests can observe and kill.
//   gridrun-results-testwriter live DIR ID ROWS   write ROWS step rows, flush, print
//       "flushed N rows" (N = total), append 3 more rows without flushing, then wait: SIGUSR1 ->
//       another round; SIGTERM -> finish(interrupted) and print "finished PATH"; SIGKILL -> dies.
//   gridrun-results-testwriter run RUN_DIR         write the synthetic run (synthetic.hpp).
// Signals are received with sigwait (no polling, no sleeps).
#include <signal.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>

#include "gridrun/results/reader.hpp"
#include "gridrun/results/writer.hpp"
#include "synthetic.hpp"

using namespace gridrun::results;

namespace {

StepRow row(std::int64_t i, int ranks) {
  StepRow r;
  r.step = i;
  r.epoch = i / 10;
  r.wall_s = 0.01 * static_cast<double>(i + 1);
  r.loss = 1.0 / static_cast<double>(i + 1);
  r.samples_per_s = 3200;
  r.step_s = 0.01;
  r.rank_step_s.assign(ranks, 0.01);
  return r;
}

int live(const std::string& dir, const std::string& id, int rows) {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGUSR1);
  sigaddset(&set, SIGTERM);
  sigprocmask(SIG_BLOCK, &set, nullptr);
  JobFileInfo info;
  info.id = id;
  info.run = "live";
  info.params = gridrun::jobs::job_params_from_json("{\"model\":\"mlp\",\"ranks\":2,\"seed\":0}");
  info.ranks = 2;
  info.gpu_absent_reason = "test";
  info.flush_interval_s = 0;
  auto w = JobWriter::create(dir, info);
  std::int64_t next = 0, flushed = 0;
  for (;;) {
    for (int k = 0; k < rows; ++k) w->append_step(row(next++, 2));
    EpochRow e;
    e.epoch = flushed / 10;
    e.test_acc = 0.5;
    w->append_epoch(e);
    w->flush();
    flushed = next;
    std::printf("flushed %lld rows\n", static_cast<long long>(flushed));
    std::fflush(stdout);
    for (int k = 0; k < 3; ++k) w->append_step(row(next++, 2));  // never flushed before a kill
    int sig = 0;
    sigwait(&set, &sig);
    if (sig == SIGTERM) {
      w->finish(Status::Interrupted, "SIGTERM", {});
      std::printf("finished %s\n", w->path().c_str());
      return 0;
    }
  }
}

}  // namespace

int main(int argc, char** argv) {
  try {
    std::string mode = argc > 1 ? argv[1] : "";
    if (mode == "live" && argc == 5) return live(argv[2], argv[3], std::atoi(argv[4]));
    if (mode == "run" && argc == 3) {
      testing::make_synthetic_run(argv[2]);
      return 0;
    }
    std::cerr << "usage: gridrun-results-testwriter live DIR ID ROWS | run RUN_DIR\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "testwriter: " << e.what() << "\n";
    return 1;
  }
}
