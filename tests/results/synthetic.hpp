// Deterministic job files written with the real JobWriter, shared by the report golden tests, the
// Python schema test and the kill test helper. Values are made up but shaped like real runs
// (weak scaling over 1/2/4 CPU ranks, a GPU job pair, two seeds, a failed and an unfinished job).
#pragma once

#include <string>

#include "gridrun/results/writer.hpp"

namespace gridrun::results::testing {

struct SyntheticJob {
  std::string id, device = "cpu";
  int ranks = 1, seed = 0, steps = 20, epochs = 2;
  double target = 0.85;
  Status status = Status::Completed;
  bool finish = true;  // false: leave a .partial as a dead job would
  std::string phase;   // its compare-by phase (meta.phase), if any
};

// Writes `<run_dir>/results/<id>.h5` for one job.
void write_synthetic_job(const std::string& run_dir, const SyntheticJob& job);

// A whole run: 8 finished jobs, 1 failed, 1 unfinished .partial, 1 corrupt file
// (results/corrupt000000.h5), 1 job listed in jobs/ without results (missing000000), and a
// state.json with two phases.
void make_synthetic_run(const std::string& run_dir);

}  // namespace gridrun::results::testing
