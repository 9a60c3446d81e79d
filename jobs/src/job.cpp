// Job files: the hand-off from `gridrun` to `gridrun-train`. Written with our own JSON writer
// (canonical params, so a file's params hash to its id) and read back with yaml-cpp, since JSON is
// a subset of YAML 1.2 flow syntax and yaml-cpp is already a dependency.
#include "gridrun/jobs/job.hpp"

#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <system_error>

#include "text.hpp"
#include "values.hpp"

namespace gridrun::jobs {

namespace fs = std::filesystem;

std::string job_to_json(const Job& job) {
  std::string out = "{\"id\":";
  detail::append_json_string(out, job.id);
  out += ",\"run\":";
  detail::append_json_string(out, job.run);
  out += ",\"index\":" + std::to_string(job.index);
  out += ",\"params\":" + canonical_json(job.params);
  out += ",\"meta\":{";
  bool first = true;
  for (const auto& [k, v] : job.meta) {
    if (!first) out.push_back(',');
    first = false;
    detail::append_json_string(out, k);
    out.push_back(':');
    detail::append_json_string(out, v);
  }
  out += "}}";
  return out;
}

void write_job_file(const std::string& path, const Job& job) {
  const fs::path target(path);
  if (target.has_parent_path()) fs::create_directories(target.parent_path());
  // Same directory as the target so that rename() is atomic; pid keeps concurrent writers apart.
  const fs::path tmp = target.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error(tmp.string() + ": cannot open for writing");
    out << job_to_json(job) << '\n';
    out.flush();
    if (!out) {
      std::error_code ec;
      fs::remove(tmp, ec);
      throw std::runtime_error(tmp.string() + ": write failed");
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    std::error_code ignored;
    fs::remove(tmp, ignored);
    throw std::runtime_error(path + ": cannot rename temp file: " + ec.message());
  }
}

Job job_from_json(const std::string& json, const std::string& origin) {
  YAML::Node root;
  try {
    root = YAML::Load(json);
  } catch (const YAML::Exception& e) {
    throw std::runtime_error(origin + ":" + std::to_string(e.mark.line + 1) + ":" +
                             std::to_string(e.mark.column + 1) + ": not valid JSON: " + e.msg);
  }
  if (!root.IsMap()) throw std::runtime_error(origin + ": expected a JSON object");
  auto need = [&](const char* key) {
    YAML::Node n = root[key];
    if (!n) throw std::runtime_error(origin + ": " + key + ": missing");
    return n;
  };
  Job job;
  YAML::Node id = need("id"), run = need("run"), index = need("index"), params = need("params");
  if (!id.IsScalar() || id.Scalar().empty())
    throw std::runtime_error(origin + ": id: expected a non-empty string");
  job.id = id.Scalar();
  if (!run.IsScalar()) throw std::runtime_error(origin + ": run: expected a string");
  job.run = run.Scalar();
  std::int64_t ix = 0;
  if (!index.IsScalar() || !detail::parse_int(index.Scalar(), ix) || ix < 0)
    throw std::runtime_error(origin + ": index: expected a non-negative integer");
  job.index = static_cast<std::size_t>(ix);
  if (!params.IsMap()) throw std::runtime_error(origin + ": params: expected a JSON object");
  try {
    job.params = detail::params_from_node(params);
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(origin + ": " + e.what());
  }
  if (YAML::Node meta = root["meta"]) {
    if (!meta.IsMap()) throw std::runtime_error(origin + ": meta: expected a JSON object");
    for (const auto& kv : meta) {
      if (!kv.second.IsScalar())
        throw std::runtime_error(origin + ": meta." + kv.first.Scalar() + ": expected a string");
      job.meta[kv.first.Scalar()] = kv.second.Scalar();
    }
  }
  return job;
}

Job read_job_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open job file");
  std::ostringstream ss;
  ss << in.rdbuf();
  return job_from_json(ss.str(), path);
}

Resources job_resources(const JobParams& p) {
  Resources r;
  r.ranks = p.ranks;
  r.gpus = p.device == "gpu" ? p.ranks : 0;
  r.cores = p.ranks * p.threads_per_rank;
  return r;
}

}  // namespace gridrun::jobs
