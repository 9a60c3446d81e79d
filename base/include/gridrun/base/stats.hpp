// The few statistics gridrun reports: a median, and a mean with its 95 % confidence interval from
// Student's t (a handful of seeds or repeats: Georges et al., OOPSLA'07).
//
// Why here: the report's seed aggregates, the verdict's paired ratios of repeats and the
// calibration's step figures all need them; one definition below every module keeps the quantile
// table and the NaN rules the same everywhere.
#pragma once

#include <cstddef>
#include <vector>

namespace gridrun::base {

// The median of `v` (the mean of the middle two for an even count); NaN when `v` is empty.
double median(std::vector<double> v);
// The two-sided 95 % quantile of Student's t with `df` degrees of freedom (a table for 1..30,
// 1.96 beyond); NaN for df 0.
double t95(std::size_t df);

struct MeanCi {
  double mean;        // NaN without a finite value
  double half_width;  // t95(n - 1) x sd / sqrt(n); NaN below two values
  std::size_t n;      // the values that counted (NaN ones are skipped)
};
// The mean of the non-NaN values of `v` and the half width of its 95 % interval.
MeanCi mean_ci95(const std::vector<double>& v);

}  // namespace gridrun::base
