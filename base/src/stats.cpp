// See stats.hpp.
#include "gridrun/base/stats.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace gridrun::base {

namespace {
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

double median(std::vector<double> v) {
  if (v.empty()) return kNaN;
  std::sort(v.begin(), v.end());
  const std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

double t95(std::size_t df) {
  static const double t[] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                             2.201,  2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                             2.080,  2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
  if (df == 0) return kNaN;
  return df <= 30 ? t[df - 1] : 1.96;
}

MeanCi mean_ci95(const std::vector<double>& v) {
  MeanCi a{kNaN, kNaN, 0};
  double sum = 0;
  for (double x : v)
    if (!std::isnan(x)) {
      sum += x;
      ++a.n;
    }
  if (!a.n) return a;
  a.mean = sum / static_cast<double>(a.n);
  if (a.n > 1) {
    double ss = 0;
    for (double x : v)
      if (!std::isnan(x)) ss += (x - a.mean) * (x - a.mean);
    const double sd = std::sqrt(ss / static_cast<double>(a.n - 1));
    a.half_width = t95(a.n - 1) * sd / std::sqrt(static_cast<double>(a.n));
  }
  return a;
}

}  // namespace gridrun::base
