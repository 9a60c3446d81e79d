// The figures derived from a job's rows (summary.cpp): what the writer stores as /summary at
// finish() and the readers fill in for a file without one. A header of its own so that the
// writer takes it without including the reader.
#pragma once

#include "gridrun/results/format.hpp"

namespace gridrun::results {

// Figures derived from a job's rows (see docs/results.md, "/summary"): step-time percentiles after
// `timing_warmup_steps`, throughput, comm shares, time/epochs to target, peak memory, utilization,
// power and energy. The writer stores these at finish(); entries of the Summary passed to
// finish() override or extend them.
Summary derive_summary(const JobData& job);

}  // namespace gridrun::results
