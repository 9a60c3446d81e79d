// The answer a compare-by run exists for, in a few sentences, first in every report: which
// arrangement finished its jobs sooner, by how much, and how far to trust it: whether the margin is
// inside the noise of the seeds, whether a phase was disturbed by other work on the machine (its
// CPU, its GPUs shared or throttled, its Slurm nodes shared with another job) or measured apart
// from the others under different load, whether the answer is about start-up rather than
// training, whether a phase missed its prediction; and, when a phase is not a measurement, why and
// the command that measures it again.
//
// Why text built here and not by each output: the text, CSV/JSON and HTML reports say the same
// thing, and golden tests pin the wording (tests/report). docs/report.md "Reading the verdict"
// explains each sentence and the thresholds below.
#pragma once

#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "gridrun/report/phases.hpp"

namespace gridrun::report {

// A phase measured while more than this share of the machine's CPU went to processes outside the
// run is "disturbed": its time is not comparable. A quiet 2-core VM measures 0-3 % (the runner's
// own sampler thread and the kernel); one CPU hog on 2 cores takes 33-50 % (docs/report.md).
inline constexpr double kDisturbedShare = 0.20;
// A GPU phase whose GPUs had a compute process of no job of the run beside its own in more than
// this share of the samples was shared: the GPU time-slices between contexts, so a stranger's
// kernels take turns with the phase's own (docs/report.md: why 10 %).
inline constexpr double kGpuSharedShare = 0.10;
// A GPU phase whose GPUs were throttled (power cap, thermal, hardware slowdown; hw/gpu_conditions.hpp)
// in more than this share of the samples ran slower than its hardware does: not comparable.
inline constexpr double kThrottledShare = 0.20;
// Phases measured in different sittings are compared only when their outside loads differ by at
// most this much (and neither is disturbed); so are their GPUs' throttled and shared shares.
inline constexpr double kApartLoadDifference = 0.10;
// When launch is more than this share of a phase's core- or GPU-seconds, the answer is about
// start-up, and the training-only comparison is given beside it.
inline constexpr double kLaunchBoundShare = 0.5;
// A phase further off its calibrated prediction than this (faster) is named beside the verdict.
inline constexpr double kPredictionOff = 0.25;
// A phase slower than its calibrated prediction by more than this is named beside the verdict,
// whatever its load: a steady 9 % beside a run made both makespans 17-23 % longer, 16 % one phase
// 27 % slower, and neither was "disturbed" (issue 58). When removing that slowdown could turn the
// winner, the verdict is inconclusive. Above the prediction's own error on a quiet machine (median
// 3.9 %, worst 14.3 % over 48 phases: BENCHMARKS.md, "Warm launches").
inline constexpr double kSlowerThanCalibrated = 0.15;
// A phase slower than predicted while other processes took more than this share (but not more
// than kDisturbedShare) is said to be slowed by that load rather than by a stale calibration.
inline constexpr double kSlowingShare = 0.05;

struct VerdictOptions {
  std::string compare_by;    // the grid's key ("ranks"); "" when unknown
  std::string rerun_prefix;  // "gridrun run RUN/grid.yaml --out OUT": a rerun command without --rerun
};

// The answer in a few words, for places with room for one short cell (a row of `gridrun ls`):
// the faster phase, its ratio and interval first, then a mark for each way to read it with care.
struct VerdictHeadline {
  std::string winner;  // the faster phase's label, as measured ("ranks=2")
  double ratio = std::nan(""), lo = std::nan(""), hi = std::nan("");  // interval: with repeats
  bool inconclusive = false;            // the headline sentence says "inconclusive"
  bool disturbed = false;               // a phase was disturbed (CPU, GPUs, Slurm nodes)
  bool slower_than_calibrated = false;  // a phase ran > kSlowerThanCalibrated slower than predicted
  bool launch_bound = false;            // launch is most of the resource-seconds: about start-up
  // "ranks=2 1.66x [1.41, 1.95]; inconclusive, disturbed, slowed, start-up" (marks when they hold).
  std::string text() const;
};

struct Verdict {
  std::vector<std::string> lines;           // verdict_lines
  std::optional<VerdictHeadline> headline;  // when two or more phases were measured
};
Verdict verdict_of(const std::vector<PhaseFigures>& phases, const VerdictOptions& opts);

// No lines when there are fewer than two phases.
std::vector<std::string> verdict_lines(const std::vector<PhaseFigures>& phases, const VerdictOptions& opts);

// The name of a phase's arrangement with its compare-by label: "ranks=1 (2 jobs x 1 rank, side by
// side)", what every output calls a phase.
std::string phase_title(const PhaseFigures& p);

}  // namespace gridrun::report
