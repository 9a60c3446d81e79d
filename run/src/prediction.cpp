// prediction.json (see prediction.hpp): one writer, one reader.
#include "gridrun/run/prediction.hpp"

#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <utility>

#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/json.hpp"
#include "gridrun/base/json_checked.hpp"
#include "gridrun/base/text.hpp"

namespace gridrun::run {

namespace {
constexpr const char* kFormat = "gridrun-prediction-1";
// What says where the prediction came from, by key, in the order it is written: write_prediction
// and read_prediction both go through this table, so each key is named once.
constexpr std::pair<const char*, std::string Prediction::*> kTexts[] = {
    {"source", &Prediction::source}, {"created", &Prediction::created}, {"policy", &Prediction::policy}};
}  // namespace

void write_prediction(const std::string& path, const Prediction& p) {
  base::Json j = base::Json::object();
  j["format"] = kFormat;
  for (const auto& [key, field] : kTexts) j[key] = p.*field;
  j["makespan_s"] = base::json_number(p.makespan_s, 6);
  if (std::isfinite(p.calibration_other_cpu_share))
    j["calibration_other_cpu_share"] = base::json_number(p.calibration_other_cpu_share, 4);
  base::Json phases = base::Json::object();
  for (const auto& name : p.phase_order) {
    const auto it = p.phases.find(name);
    if (it == p.phases.end()) continue;
    base::Json ph = base::Json::object();
    ph["makespan_s"] = base::json_number(it->second.makespan_s, 6);
    ph["jobs"] = it->second.jobs;
    ph["max_running"] = it->second.max_running;
    base::append_new_member(phases, name, std::move(ph));
  }
  j["phases"] = std::move(phases);
  base::Json jobs = base::Json::object();
  for (const auto& [id, s] : p.job_seconds) base::append_new_member(jobs, id, base::json_number(s, 6));
  j["jobs"] = std::move(jobs);
  base::write_file_atomic(path, base::checked_json_text(j, 1));
}

namespace {

// A predicted duration: a number, finite, in [0, kMaxPredictedSeconds]; "" when it is, else what
// is wrong ("missing", "not a number (\"x\")", "-1 s is outside ...").
std::string bad_seconds(const base::Json& v, double& out) {
  if (!v.is_number()) return "not a number (" + base::dump_line(v).substr(0, 40) + ")";
  const double d = v.get<double>();
  if (!std::isfinite(d) || d < 0 || d > kMaxPredictedSeconds)
    return base::dump_line(v).substr(0, 40) + " s is outside 0 .. 1e16 s";
  out = d;
  return "";
}
std::string bad_seconds(const base::Json& obj, const char* key, double& out) {
  const auto it = obj.find(key);
  return it == obj.end() ? "missing" : bad_seconds(*it, out);
}

// A count: a whole number in [0, max].
std::string bad_count(const base::Json& obj, const char* key, long long max, int& out) {
  const auto it = obj.find(key);
  if (it == obj.end()) return "missing";
  if (!it->is_number_integer() || (it->is_number_unsigned() && it->get<std::uint64_t>() > 1ULL << 62) ||
      it->get<long long>() < 0 || it->get<long long>() > max)
    return base::dump_line(*it).substr(0, 40) + " is not a whole number in 0 .. " + std::to_string(max);
  out = static_cast<int>(it->get<long long>());
  return "";
}

}  // namespace

Prediction read_prediction(const std::string& path) {
  const base::Json j = base::read_checked_json_file(path, base::kinds::kPrediction);
  if (!j.is_object() || base::get_string(j, "format") != kFormat)
    throw std::runtime_error(path + ": not a gridrun prediction (format " + kFormat + ")");
  // Checked completely (issue 45): what says where the prediction came from must be text, or the
  // file is not used at all; a bad figure costs that figure, with one warning naming its key
  // (a renamed key used to drop "(predicted ...)" from the report without a word).
  auto text = [&](const char* key) {
    const auto it = j.find(key);
    if (it == j.end()) return std::string();
    if (!it->is_string())
      throw std::runtime_error(path + ": " + key + ": expected a string (a damaged prediction)");
    return it->get<std::string>();
  };
  auto warn = [&](const std::string& key, const std::string& what, const char* consequence) {
    return base::printable_line(path + ": " + key + ": " + what + "; " + consequence);
  };
  Prediction p;
  for (const auto& [key, field] : kTexts) p.*field = text(key);
  if (const std::string bad = bad_seconds(j, "makespan_s", p.makespan_s); !bad.empty())
    p.warnings.push_back(warn("makespan_s", bad, "no predicted makespan"));
  if (const auto it = j.find("calibration_other_cpu_share"); it != j.end()) {
    const double v = it->is_number() ? it->get<double>() : std::nan("");
    if (v >= 0 && v <= 1)
      p.calibration_other_cpu_share = v;
    else
      p.warnings.push_back(warn("calibration_other_cpu_share",
                                base::dump_line(*it).substr(0, 40) + " is not in 0 .. 1",
                                "the calibration's load is read as not recorded"));
  }
  for (const char* key : {"phases", "jobs"})
    if (const auto it = j.find(key); it != j.end() && !it->is_object())
      throw std::runtime_error(path + ": " + key + ": expected an object (a damaged prediction)");
  if (const auto it = j.find("phases"); it != j.end())
    for (const auto& [name, ph] : it->items()) {
      const std::string where = "phases." + name;
      const char* consequence = "that phase has no prediction";
      if (!ph.is_object()) {
        p.warnings.push_back(warn(where, "not an object", consequence));
        continue;
      }
      PhasePrediction pp;
      std::string bad, key = "makespan_s";
      bad = bad_seconds(ph, "makespan_s", pp.makespan_s);
      if (bad.empty()) bad = bad_count(ph, (key = "jobs").c_str(), kMaxPredictedJobs, pp.jobs);
      if (bad.empty()) bad = bad_count(ph, (key = "max_running").c_str(), pp.jobs, pp.max_running);
      if (!bad.empty()) {
        p.warnings.push_back(warn(where + "." + key, bad, consequence));
        continue;
      }
      p.phase_order.push_back(name);
      p.phases[name] = pp;
    }
  if (const auto it = j.find("jobs"); it != j.end())
    for (const auto& [id, v] : it->items()) {
      double seconds = 0;
      if (const std::string bad = bad_seconds(v, seconds); !bad.empty())
        p.warnings.push_back(warn("jobs." + id, bad, "that job has no prediction"));
      else
        p.job_seconds[id] = seconds;
    }
  return p;
}

}  // namespace gridrun::run
