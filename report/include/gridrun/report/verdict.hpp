// The answer a compare-by run exists for, in a few sentences, first in every report: which
// arrangement finished its jobs sooner, by how much, whether the margin is inside the noise of the
// seeds, which reached the target first, and, when a phase is not a measurement, why and the
// command that measures it again.
//
// Why text built here and not by each output: the text, CSV/JSON and HTML reports say the same
// thing, and golden tests pin the wording (tests/report).
#pragma once

#include <string>
#include <vector>

#include "gridrun/report/phases.hpp"

namespace gridrun::report {

struct VerdictOptions {
  std::string compare_by;    // the grid's key ("ranks"); "" when unknown
  std::string rerun_prefix;  // "gridrun run RUN/grid.yaml --out OUT": a rerun command without --rerun
};

// No lines when there are fewer than two phases.
std::vector<std::string> verdict_lines(const std::vector<PhaseFigures>& phases, const VerdictOptions& opts);

}  // namespace gridrun::report
