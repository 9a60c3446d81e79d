// What a calibrated `gridrun simulate` (or `gridrun run`, before it launches) predicted for a run:
// prediction.json in the run directory, written by the scheduler and read by the report, which
// puts it beside what was measured ("(predicted 1.58x)", docs/scheduler.md "Predicting a grid
// before running it").
//
// Why a file of its own: the scheduler predicts, the report measures, and neither may depend on
// the other (docs/architecture.md); both depend on run/, so the prediction travels through it.
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <vector>

namespace gridrun::run {

// The largest predicted duration read_prediction takes (seconds): the scheduler's longest job
// (1e9 s) times the product's job limit (10^7). Beyond it, negative or not a number is damage.
constexpr double kMaxPredictedSeconds = 1e16;
constexpr long long kMaxPredictedJobs = 10'000'000;  // the product's job limit, per phase

// A calibration measurement during which other processes took more than this share of the
// machine's CPU is disturbed: `gridrun calibrate` measures it again, and refuses to store one still
// disturbed unless --accept-load. Lower than the verdict's kDisturbedShare (20 %), because every
// prediction from the file inherits the error: a steady 9 % beside a run made both makespans
// 17-23 % longer, 16 % a phase 27 % slower (issue 58; docs/scheduler.md, "Calibrating under load"). Here
// because both the scheduler (which calibrates) and the report (whose cross-check blames a loaded calibration
// for a run faster than predicted) read it.
inline constexpr double kCalibrationLoadShare = 0.10;

struct PhasePrediction {
  double makespan_s = std::nan("");
  int jobs = 0;
  int max_running = 0;  // most of its jobs running at once in the simulated schedule
};

struct Prediction {
  std::string source;   // "calibration" (calibration.json of this host and build) or "cost model"
  std::string created;  // ISO time
  std::string policy;   // placement policy simulated
  double makespan_s = std::nan("");
  // The largest share of the CPU other processes took while the calibration it came from measured
  // (calibration.json's conditions); NaN: not recorded. The report's cross-check reads it: a run
  // faster than predicted from a loaded calibration is the calibration's fault, not the run's.
  double calibration_other_cpu_share = std::nan("");
  std::vector<std::string> phase_order;           // phases in run order
  std::map<std::string, PhasePrediction> phases;  // by compare-by value
  std::map<std::string, double> job_seconds;      // by job id: launch to exit
  // What read_prediction left out, one printable line each naming the file and key.
  std::vector<std::string> warnings;
};

// Atomic write; throws std::runtime_error naming the path.
void write_prediction(const std::string& path, const Prediction& p);
// Checks prediction.json completely: throws std::runtime_error naming the path when it is
// missing, malformed, not a prediction, or a text field or section has the wrong type; a bad
// figure (missing, not a number, negative, beyond kMaxPredictedSeconds, a count out of range) is
// left out with one line in `warnings` naming the file and key.
Prediction read_prediction(const std::string& path);

}  // namespace gridrun::run
