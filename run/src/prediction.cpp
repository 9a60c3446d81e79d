// prediction.json (see prediction.hpp): one writer, one reader.
#include "gridrun/run/prediction.hpp"

#include <stdexcept>

#include "gridrun/base/fs.hpp"
#include "gridrun/base/json.hpp"

namespace gridrun::run {

namespace {
constexpr const char* kFormat = "gridrun-prediction-1";
}

void write_prediction(const std::string& path, const Prediction& p) {
  base::Json j = base::Json::object();
  j["format"] = kFormat;
  j["source"] = p.source;
  j["created"] = p.created;
  j["policy"] = p.policy;
  j["makespan_s"] = base::json_number(p.makespan_s, 6);
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
  base::write_file_atomic(path, j.dump(1) + "\n");
}

Prediction read_prediction(const std::string& path) {
  const base::Json j = base::read_json_file(path);
  if (!j.is_object() || base::get_string(j, "format") != kFormat)
    throw std::runtime_error(path + ": not a gridrun prediction (format " + kFormat + ")");
  Prediction p;
  p.source = base::get_string(j, "source");
  p.created = base::get_string(j, "created");
  p.policy = base::get_string(j, "policy");
  p.makespan_s = base::get_number(j, "makespan_s", std::nan(""));
  if (const auto it = j.find("phases"); it != j.end() && it->is_object())
    for (const auto& [name, ph] : it->items()) {
      p.phase_order.push_back(name);
      PhasePrediction pp;
      pp.makespan_s = base::get_number(ph, "makespan_s", std::nan(""));
      pp.jobs = static_cast<int>(base::get_int(ph, "jobs"));
      pp.max_running = static_cast<int>(base::get_int(ph, "max_running"));
      p.phases[name] = pp;
    }
  if (const auto it = j.find("jobs"); it != j.end() && it->is_object())
    for (const auto& [id, v] : it->items())
      if (v.is_number()) p.job_seconds[id] = v.get<double>();
  return p;
}

}  // namespace gridrun::run
