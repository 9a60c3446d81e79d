// gridrun-test-make-run: a finished run of N real jobs without training them, for the many-jobs
// scenario tests (e2e_many.py) and bench/results/bench_run_scale.sh.
//
//   gridrun-test-make-run GRID OUT [--rewrite K [--fail]] [--set KEY=VALUE[,VALUE...]]... [--spread]
//
// Expands GRID like `gridrun run` (same run directory: grid.yaml, job files, state.json), then
// writes every job's results file through the real JobWriter (20 step rows, 2 epochs, 4 util rows,
// status completed, its own id and parameters), so each file is a valid, distinct job of the run.
// --rewrite K: writes the first K jobs' files again (a status afterwards must read only those K);
// with --fail they end failed ("made to fail" on host "elsewhere") instead of completed.
// --set: as `gridrun run --set` (jobs::parse_overrides; recorded in state.json as a run does).
// --spread: job k's figures differ by a permutation of k (final test accuracy 0.7 + 0.01 *
// (7k mod 11), step time 10 + (3k mod 11) ms), not in grid order, for tests of `report --sort`.
#include <chrono>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

#include "gridrun/base/text.hpp"
#include "gridrun/jobs/grid.hpp"
#include "gridrun/jobs/select.hpp"
#include "gridrun/results/writer.hpp"
#include "gridrun/run/prepare.hpp"
#include "gridrun/run/run_dir.hpp"

using namespace gridrun;

namespace {

void write_job(const std::string& dir, const jobs::Job& job, const std::string& run, int variant, bool spread,
               bool fail = false) {
  const int acc_rank = spread ? static_cast<int>((job.index * 7) % 11) : 0;
  const int step_rank = spread ? static_cast<int>((job.index * 3) % 11) : 0;
  results::JobFileInfo info;
  info.id = job.id;
  info.run = run;
  info.params = job.params;
  info.ranks = 1;
  info.flush_interval_s = 0;
  info.attempt_hostname = fail ? "elsewhere" : "bench";
  auto w = results::JobWriter::create(dir, info);
  results::StepRow s;
  s.rank_step_s = {0.01};
  for (int i = 1; i <= 20; ++i) {
    s.step = i;
    s.epoch = (i - 1) / 10;
    s.wall_s = 0.01 * i;
    s.loss = 2.3 / i + 0.001 * variant;
    s.step_s = 0.01 + 0.001 * step_rank;
    s.samples_per_s = spread ? 64 / s.step_s : 6400;
    w->append_step(s);
  }
  for (int e = 0; e < 2; ++e) {
    results::EpochRow r;
    r.epoch = e;
    r.train_loss = 1.0 / (e + 1);
    r.test_acc = 0.5 + 0.2 * e + 0.01 * acc_rank;
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
  if (fail)
    w->finish(results::Status::Failed, "made to fail", {});
  else
    w->finish(results::Status::Completed, "", {});
}

}  // namespace

int main(int argc, char** argv) {
  try {
    if (argc < 3 || std::strcmp(argv[1], "--help") == 0) {
      std::cerr
          << "usage: gridrun-test-make-run GRID OUT [--rewrite K [--fail]] [--set KEY=VALUE]... [--spread]\n";
      return 2;
    }
    const std::string grid = argv[1], out = argv[2];
    int rewrite = -1;
    bool spread = false, fail = false;
    std::vector<std::string> set;
    for (int a = 3; a < argc; ++a) {
      if (std::strcmp(argv[a], "--rewrite") == 0 && a + 1 < argc) {
        rewrite = std::atoi(argv[++a]);
      } else if (std::strcmp(argv[a], "--set") == 0 && a + 1 < argc) {
        set.emplace_back(argv[++a]);
      } else if (std::strcmp(argv[a], "--spread") == 0) {
        spread = true;
      } else if (std::strcmp(argv[a], "--fail") == 0) {
        fail = true;
      } else {
        std::cerr << "gridrun-test-make-run: unknown argument " << argv[a] << "\n";
        return 2;
      }
    }
    jobs::LoadOptions lo;
    lo.overrides = jobs::parse_overrides(set, "--set");
    jobs::Expansion ex = jobs::load_grid(grid, lo);
    run::RunDir rd(out + "/" + ex.name);
    const auto t0 = std::chrono::steady_clock::now();
    if (rewrite >= 0) {
      for (int k = 0; k < rewrite && k < static_cast<int>(ex.jobs.size()); ++k)
        write_job(rd.results_dir(), ex.jobs[k], ex.name, 1, spread, fail);
    } else {
      run::PrepareOptions popt;
      popt.grid_file = grid;
      popt.overrides = run::override_texts(lo.overrides);  // as scheduler::run_grid records them
      run::PreparedRun prep = run::prepare_run(rd, ex, popt, std::cerr);
      const double now = base::unix_now();
      for (const auto& job : ex.jobs) {
        write_job(rd.results_dir(), job, ex.name, 0, spread);
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
