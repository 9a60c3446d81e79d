// gridrun-test-make-run: a finished run of N real jobs without training them, for the many-jobs
// scenario tests (e2e_many.py) and bench/results/bench_run_scale.sh.
//
//   gridrun-test-make-run GRID OUT [--rewrite K]
//
// Expands GRID like `gridrun run` (same run directory: grid.yaml, job files, state.json), then
// writes every job's results file through the real JobWriter (20 step rows, 2 epochs, 4 util rows,
// status completed, its own id and parameters), so each file is a valid, distinct job of the run.
// --rewrite K: writes the first K jobs' files again (a status afterwards must read only those K).
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "gridrun/base/text.hpp"
#include "gridrun/jobs/grid.hpp"
#include "gridrun/results/writer.hpp"
#include "gridrun/run/prepare.hpp"
#include "gridrun/run/run_dir.hpp"

using namespace gridrun;

namespace {

void write_job(const std::string& dir, const jobs::Job& job, const std::string& run, int variant) {
  results::JobFileInfo info;
  info.id = job.id;
  info.run = run;
  info.params = job.params;
  info.ranks = 1;
  info.flush_interval_s = 0;
  info.attempt_hostname = "bench";
  auto w = results::JobWriter::create(dir, info);
  results::StepRow s;
  s.rank_step_s = {0.01};
  for (int i = 1; i <= 20; ++i) {
    s.step = i;
    s.epoch = (i - 1) / 10;
    s.wall_s = 0.01 * i;
    s.loss = 2.3 / i + 0.001 * variant;
    s.step_s = 0.01;
    s.samples_per_s = 6400;
    w->append_step(s);
  }
  for (int e = 0; e < 2; ++e) {
    results::EpochRow r;
    r.epoch = e;
    r.train_loss = 1.0 / (e + 1);
    r.test_acc = 0.5 + 0.2 * e;
    r.epoch_s = 0.1;
    r.wall_s = 0.1 * (e + 1);
    w->append_epoch(r);
  }
  for (int u = 0; u < 4; ++u) {
    results::UtilRow r;
    r.time_s = 0.05 * u;
    r.rank_cpu_pct = {95};
    r.rank_rss_bytes = {1e8};
    r.node_cpu_pct = 50;
    w->append_util(r);
  }
  w->finish(results::Status::Completed, "", {});
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc < 3 || std::strcmp(argv[1], "--help") == 0) {
      std::cerr << "usage: gridrun-test-make-run GRID OUT [--rewrite K]\n";
      return 2;
    }
    const std::string grid = argv[1], out = argv[2];
    const int rewrite = argc >= 5 && std::strcmp(argv[3], "--rewrite") == 0 ? std::atoi(argv[4]) : -1;
    jobs::Expansion ex = jobs::load_grid(grid);
    run::RunDir rd(out + "/" + ex.name);
    const auto t0 = std::chrono::steady_clock::now();
    if (rewrite >= 0) {
      for (int k = 0; k < rewrite && k < static_cast<int>(ex.jobs.size()); ++k)
        write_job(rd.results_dir(), ex.jobs[k], ex.name, 1);
    } else {
      run::PrepareOptions popt;
      popt.grid_file = grid;
      run::PreparedRun prep = run::prepare_run(rd, ex, popt, std::cerr);
      const double now = base::unix_now();
      for (const auto& job : ex.jobs) {
        write_job(rd.results_dir(), job, ex.name, 0);
        auto& rec = prep.state.jobs[job.id];
        rec.state = run::JobOutcome::Completed;
        rec.attempts = 1;
        rec.exit_codes = {0};
        rec.start_unix = now;
        rec.end_unix = now + 1;
        rec.host = "bench";
      }
      rd.save_state(prep.state);
    }
    std::cerr << "gridrun-test-make-run: " << (rewrite >= 0 ? rewrite : static_cast<int>(ex.jobs.size()))
              << " job files in "
              << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() << " s -> "
              << rd.root() << "\n";
    return 0;
  } catch (const std::exception& e) {
    std::cerr << "gridrun-test-make-run: " << e.what() << "\n";
    return 1;
  }
}
