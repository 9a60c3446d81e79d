// The vocabulary's few functions (see format.hpp): status and parameter values as text, a job
// record's attributes and parameters by name.
#include "gridrun/results/format.hpp"

#include <stdexcept>

#include <algorithm>
#include <cstdio>
#include <set>

namespace gridrun::results {

std::string to_string(Status s) {
  switch (s) {
    case Status::Running: return "running";
    case Status::Completed: return "completed";
    case Status::Failed: return "failed";
    case Status::Interrupted: return "interrupted";
    case Status::TargetReached: return "target_reached";
    case Status::Diverged: return "diverged";
  }
  return "unknown";
}

std::string to_string(const ParamValue& v) {
  if (auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.10g", *d);
    return buf;
  }
  return std::get<std::string>(v);
}

const std::vector<double>* TableData::column(const std::string& name) const {
  auto it = columns.find(name);
  return it == columns.end() ? nullptr : &it->second;
}

std::string JobData::attr_string(const std::string& name, const std::string& fallback) const {
  auto it = attrs.find(name);
  if (it == attrs.end()) return fallback;
  if (auto* s = std::get_if<std::string>(&it->second)) return *s;
  if (auto* i = std::get_if<std::int64_t>(&it->second)) return std::to_string(*i);
  return to_string(ParamValue(std::get<double>(it->second)));
}

double JobData::attr_number(const std::string& name, double fallback) const {
  auto it = attrs.find(name);
  if (it == attrs.end()) return fallback;
  if (auto* i = std::get_if<std::int64_t>(&it->second)) return static_cast<double>(*i);
  if (auto* d = std::get_if<double>(&it->second)) return *d;
  return fallback;
}

std::optional<ParamValue> param_value(const RecordedParams& p, const std::string& name) {
  if (!p) return std::nullopt;
  if (jobs::find_param(name)) return jobs::get_param(*p, name);
  try {  // a command grid's own parameter (params:); a damaged text answers nothing
    return jobs::user_param(*p, name);
  } catch (const std::invalid_argument&) {
    return std::nullopt;
  }
}

std::string param_text(const RecordedParams& p, const std::string& name) {
  auto v = param_value(p, name);
  return v ? to_string(*v) : "";
}

std::vector<std::string> varying_params(const std::vector<const RecordedParams*>& params) {
  std::vector<std::string> out;
  if (std::none_of(params.begin(), params.end(), [](const auto* p) { return p->has_value(); })) return out;
  // A parameter varies when some job's value differs from the first job's: typed values compared
  // first (cheap), their text where those differ (as a table shows them); the scan stops at the
  // first difference. (A set of every job's text cost 1.3 s of `status` at 100,000 jobs.)
  auto text = [](const RecordedParams* p, const std::string& name) {
    return *p ? param_text(*p, name) : std::string("\x01none");
  };
  // gridrun's parameters, then a command grid's own (params:) by name; their JSON member
  // user_params is no column of its own.
  std::vector<std::string> names;
  for (const auto& spec : jobs::param_table())
    if (spec.name != "user_params") names.push_back(spec.name);
  for (const auto* p : params)
    if (p->has_value()) {
      try {
        for (const auto& [name, v] : jobs::user_params_of(**p)) names.push_back(name);
      } catch (const std::invalid_argument&) {
      }
      break;
    }
  // gridrun's own parameters when every job has them: each job's values once, in table order,
  // compared with the first job's for the names not yet known to vary (a lookup by name per job
  // and parameter was most of varying_params at 100,000 jobs).
  std::vector<bool> decided(names.size(), false);
  if (std::all_of(params.begin(), params.end(), [](const auto* p) { return p->has_value(); })) {
    const std::vector<jobs::Value> first = jobs::param_values(**params.front());
    std::vector<std::size_t> column;  // names[k] is column[k] of the table (user_params skipped)
    for (std::size_t c = 0; c < jobs::param_table().size(); ++c)
      if (jobs::param_table()[c].name != "user_params") column.push_back(c);
    std::vector<std::size_t> open;  // indices into names still equal everywhere
    for (std::size_t k = 0; k < column.size(); ++k) open.push_back(k);
    for (const auto* p : params) {
      if (open.empty()) break;
      const std::vector<jobs::Value> values = jobs::param_values(**p);
      for (std::size_t q = 0; q < open.size();) {
        const std::size_t k = open[q];
        const std::size_t c = column[k];
        if (values[c] != first[c] && to_string(values[c]) != to_string(first[c])) {
          out.push_back(names[k]);
          open.erase(open.begin() + static_cast<std::ptrdiff_t>(q));
        } else {
          ++q;
        }
      }
    }
    for (std::size_t k = 0; k < column.size(); ++k) decided[k] = true;
  }
  for (std::size_t n = 0; n < names.size(); ++n) {
    if (decided[n]) continue;
    const std::string& name = names[n];
    const std::optional<ParamValue> first = param_value(*params.front(), name);
    std::optional<std::string> first_text;
    for (const auto* p : params) {
      if (param_value(*p, name) == first) continue;
      if (!first_text) first_text = text(params.front(), name);
      if (text(p, name) != *first_text) {
        out.push_back(name);
        break;
      }
    }
  }
  // model_sha256 is derived from model_file (issue 33): where the files differ, the 64-digit hash
  // says nothing the path does not; it stays where one path held two contents.
  if (std::find(out.begin(), out.end(), "model_file") != out.end())
    out.erase(std::remove(out.begin(), out.end(), "model_sha256"), out.end());
  if (std::find(out.begin(), out.end(), "data_file") != out.end())  // data_sha256 likewise (issue 45)
    out.erase(std::remove(out.begin(), out.end(), "data_sha256"), out.end());
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace gridrun::results
