// Job files: the hand-off from `gridrun` to `gridrun-train`. The envelope (id, run, index, meta)
// is written with gridrun::base's JSON quoting and the parameters as the job's canonical JSON, byte
// for byte the text its id was computed from (so a file's params hash to its id); files are read
// with gridrun::base's JSON parser (nlohmann), whose errors name the file, line and column.
#include "gridrun/jobs/job.hpp"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <stdexcept>

#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/json.hpp"
#include "gridrun/base/text.hpp"
#include "params.hpp"
#include "text.hpp"

namespace gridrun::jobs {

namespace {

// The text of a JSON scalar as the old yaml-cpp reader saw it ("abc", "12", "true"); nullopt for
// null, lists and objects.
std::optional<std::string> scalar_text(const base::Json& j) {
  if (j.is_string()) return j.get<std::string>();
  if (j.is_primitive() && !j.is_null()) return j.dump();
  return std::nullopt;
}

const base::Json& need(const base::Json& root, const char* key, const std::string& origin) {
  auto it = root.find(key);
  if (it == root.end()) throw std::runtime_error(origin + ": " + key + ": missing");
  return *it;
}

std::size_t read_index(const base::Json& j, const std::string& origin) {
  if (j.is_number_unsigned()) return j.get<std::size_t>();
  std::int64_t ix = -1;
  if (auto t = scalar_text(j); !(t && detail::parse_int(*t, ix) && ix >= 0))
    throw std::runtime_error(origin + ": index: expected a non-negative integer");
  return static_cast<std::size_t>(ix);
}

std::map<std::string, std::string> read_meta(const base::Json& meta, const std::string& origin) {
  if (!meta.is_object()) throw std::runtime_error(origin + ": meta: expected a JSON object");
  std::map<std::string, std::string> out;
  for (const auto& [k, v] : meta.items()) {
    auto t = scalar_text(v);
    if (!t) throw std::runtime_error(origin + ": meta." + k + ": expected a string");
    out[k] = *t;
  }
  return out;
}

}  // namespace

Job make_job(const std::string& run, std::size_t index, JobParams params) {
  Job job;
  const Params by_name = from_struct(params);
  job.id = job_id(by_name);
  job.run = run;
  job.index = index;
  job.canonical = canonical_json(by_name);
  job.params = std::move(params);
  return job;
}

bool is_job_id(std::string_view id) {
  return id.size() == 12 && std::all_of(id.begin(), id.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

std::string job_to_json(const Job& job) {
  std::string out = "{\"id\":";
  out += base::json_quote(job.id);
  out += ",\"run\":";
  out += base::json_quote(job.run);
  out += ",\"index\":" + std::to_string(job.index);
  out += ",\"params\":";
  out += job.canonical.empty() ? canonical_json(job.params) : job.canonical;
  out += ",\"meta\":{";
  bool first = true;
  for (const auto& [k, v] : job.meta) {
    if (!first) out.push_back(',');
    first = false;
    out += base::json_quote(k);
    out.push_back(':');
    out += base::json_quote(v);
  }
  out += "}}";
  return out;
}

void write_job_file(const std::string& path, const Job& job) {
  const std::filesystem::path target(path);
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path());
  base::write_file_atomic(path, job_to_json(job) + "\n");
}

Job job_from_json(const std::string& json, const std::string& origin) {
  const base::Json root = base::parse_json(json, origin);  // "origin:line:col: invalid JSON: ..."
  if (!root.is_object()) throw std::runtime_error(origin + ": expected a JSON object");
  auto id = scalar_text(need(root, "id", origin));
  auto run = scalar_text(need(root, "run", origin));
  const base::Json& index = need(root, "index", origin);
  const base::Json& params = need(root, "params", origin);
  if (!id || id->empty()) throw std::runtime_error(origin + ": id: expected a non-empty string");
  if (!run) throw std::runtime_error(origin + ": run: expected a string");
  const std::size_t ix = read_index(index, origin);
  if (!params.is_object()) throw std::runtime_error(origin + ": params: expected a JSON object");
  Params p;
  try {
    p = detail::params_from_object(params);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(origin + ": " + e.what());
  }
  // The canonical text is re-rendered from the values: a hand-written file may spell numbers
  // or order keys differently, and the id of a job never depends on spelling.
  Job job = make_job(*run, ix, to_struct(p));
  job.id = *id;
  if (auto it = root.find("meta"); it != root.end()) job.meta = read_meta(*it, origin);
  // Last, so that a file's other errors are named first: the id names the job's files.
  if (!is_job_id(job.id))
    throw std::runtime_error(origin + ": id: '" + base::printable_line(job.id) +
                             "' is not a job id (12 lowercase hex digits)");
  return job;
}

Job read_job_file(const std::string& path) {
  std::string why;
  auto text = base::try_read_file(path, base::kinds::kJobFile, &why);
  if (!text) throw std::runtime_error(why.empty() ? path + ": cannot open job file" : why);
  return job_from_json(*text, path);
}

}  // namespace gridrun::jobs
