// Resource detection, cluster files and feasibility. See resources.hpp for why ids, not counts.
#include "gridrun/scheduler/resources.hpp"

#include <sched.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>

#include <yaml-cpp/yaml.h>

#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/host.hpp"
#include "gridrun/base/spawn.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/hw/nvml.hpp"
#include "gridrun/hw/visible_devices.hpp"

namespace gridrun::scheduler {

int Cluster::total_cores() const {
  int n = 0;
  for (const auto& node : nodes) n += static_cast<int>(node.cores.size());
  return n;
}
int Cluster::total_gpus() const {
  int n = 0;
  for (const auto& node : nodes) n += static_cast<int>(node.gpus.size());
  return n;
}

std::string Cluster::gpus_text() const {
  const int real = total_gpus() / std::max(1, slots_per_gpu);
  std::string s = std::to_string(real) + (real == 1 ? " GPU" : " GPUs");
  if (slots_per_gpu > 1) s += " (" + std::to_string(slots_per_gpu) + " slots each)";
  return s;
}

Request request_for(const jobs::Footprint& f, int slots_per_gpu) {
  // int counts: jobs::check refuses a job beyond them; one that skipped it (a hand-written job
  // file) is clamped to a size that fits on no node rather than wrapped to a small one (issue 45).
  const auto count = [](std::int64_t v) {
    return static_cast<int>(std::clamp<std::int64_t>(v, 0, std::numeric_limits<int>::max()));
  };
  Request r;
  r.nodes = count(f.nodes);
  r.ranks = count(f.per_node.ranks);
  r.threads_per_rank = count(f.threads_per_rank);
  r.gpus = count(f.gpu_slots_per_node(std::max(1, slots_per_gpu)));
  r.cores = count(f.per_node.cores);
  return r;
}
Request request_for(const jobs::JobParams& p) { return request_for(jobs::footprint(p)); }
Request request_for(const jobs::Job& job) { return request_for(job.params); }

std::string describe(const Request& r) {
  std::ostringstream os;
  os << r.ranks << (r.ranks == 1 ? " rank" : " ranks") << " x " << r.threads_per_rank
     << (r.threads_per_rank == 1 ? " thread" : " threads");
  if (r.gpus) os << ", " << r.gpus << (r.gpus == 1 ? " GPU" : " GPUs");
  os << ", " << r.cores << (r.cores == 1 ? " core" : " cores");
  if (r.nodes > 1) os << " on each of " << r.nodes << " nodes";
  return os.str();
}

namespace {
// Planning limits of a cluster file: the largest Slurm clusters have ~10,000 nodes and ~10^6
// cores; beyond these a file is a typo (a count with extra digits), reported instead of planned.
constexpr int kMaxClusterNodes = 16384;
constexpr std::int64_t kMaxClusterCores = std::int64_t{1} << 21;

std::vector<int> affinity_cores() {
  std::vector<int> ids;
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int i = 0; i < CPU_SETSIZE; ++i)
      if (CPU_ISSET(i, &set)) ids.push_back(i);
  }
  if (ids.empty()) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    for (long i = 0; i < std::max(1L, n); ++i) ids.push_back(static_cast<int>(i));
  }
  return ids;
}

// NVML (hw's loader: `gridrun` needs no CUDA at build or run time). Returns -1 when NVML is not
// there (then `nvidia-smi -L` is asked).
int nvml_device_count() {
  const hw::Nvml nvml;
  const std::optional<unsigned> n = nvml.device_count();
  return n ? static_cast<int>(std::min<unsigned>(*n, std::numeric_limits<int>::max())) : -1;
}

int nvidia_smi_count() {
  const base::CapturedRun r = base::run_captured({"nvidia-smi", "-L"});
  if (!r.started) return 0;
  int n = 0;
  for (const auto& line : base::split(r.out, '\n'))
    if (base::starts_with(line, "GPU ")) ++n;
  return n;
}

std::vector<std::string> detect_gpus() {
  int n = nvml_device_count();
  if (n < 0) n = nvidia_smi_count();
  std::vector<std::string> ids;
  if (const auto visible = hw::visible_devices_from_env()) {
    // CUDA stops at the first invalid entry; we keep the listed entries up to the device count.
    for (const auto& e : *visible) {
      if (static_cast<int>(ids.size()) >= n) break;
      ids.push_back(e);
    }
    return ids;
  }
  for (int i = 0; i < n; ++i) ids.push_back(std::to_string(i));
  return ids;
}

std::int64_t memory_mb() {
  long pages = sysconf(_SC_PHYS_PAGES), size = sysconf(_SC_PAGE_SIZE);
  return pages > 0 && size > 0 ? static_cast<std::int64_t>(pages) * size / (std::int64_t{1024} * 1024) : 0;
}

[[noreturn]] void bad(const std::string& file, const YAML::Node& n, const std::string& key,
                      const std::string& msg) {
  std::ostringstream os;
  const auto m = n.Mark();
  os << file << ":" << (m.line + 1) << ":" << (m.column + 1) << ": " << key << ": " << msg;
  throw std::invalid_argument(os.str());
}

int int_field(const std::string& file, const YAML::Node& n, const std::string& key, int lo, int hi) {
  if (!n.IsScalar()) bad(file, n, key, "expected an integer");
  long long v = 0;
  try {
    std::size_t used = 0;
    const std::string& s = n.Scalar();
    v = std::stoll(s, &used);
    if (used != s.size()) throw std::invalid_argument(s);
  } catch (const std::exception&) {
    bad(file, n, key, "expected an integer, got '" + n.Scalar() + "'");
  }
  if (v < lo || v > hi)
    bad(file, n, key,
        "must be in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got " + std::to_string(v));
  return static_cast<int>(v);
}

}  // namespace

Cluster detect_local() {
  Cluster c;
  Node n;
  n.name = base::hostname("localhost");
  n.cores = affinity_cores();
  n.gpus = detect_gpus();
  n.memory_mb = memory_mb();
  c.nodes.push_back(std::move(n));
  c.source = "this machine";
  c.bindable = true;
  return c;
}

Cluster load_cluster_string(const std::string& yaml, const std::string& file) {
  YAML::Node root;
  try {
    root = YAML::Load(yaml);
  } catch (const YAML::ParserException& e) {
    std::ostringstream os;
    os << file << ":" << (e.mark.line + 1) << ":" << (e.mark.column + 1) << ": " << e.msg;
    throw std::invalid_argument(os.str());
  }
  if (!root.IsMap()) bad(file, root, "(top)", "expected a mapping with a 'nodes' list");
  for (const auto& kv : root) {
    const std::string k = kv.first.as<std::string>();
    if (k != "nodes") bad(file, kv.first, k, "unknown key (expected 'nodes')");
  }
  const YAML::Node nodes = root["nodes"];
  if (!nodes || !nodes.IsSequence() || nodes.size() == 0)
    bad(file, nodes ? nodes : root, "nodes", "expected a non-empty list of nodes");
  Cluster c;
  c.source = file;
  std::set<std::string> names;
  std::int64_t total_cores = 0;
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    const YAML::Node nd = nodes[i];
    const std::string base = "nodes[" + std::to_string(i) + "]";
    if (!nd.IsMap()) bad(file, nd, base, "expected a mapping {name, cores, gpus, ...}");
    for (const auto& kv : nd) {
      const std::string k = kv.first.as<std::string>();
      if (k != "name" && k != "cores" && k != "gpus" && k != "memory_gb" && k != "count")
        bad(file, kv.first, base + "." + k, "unknown key (expected name, cores, gpus, memory_gb, count)");
    }
    if (!nd["name"] || !nd["name"].IsScalar() || nd["name"].Scalar().empty())
      bad(file, nd, base + ".name", "missing node name");
    if (!nd["cores"]) bad(file, nd, base + ".cores", "missing core count");
    Node proto;
    const std::string name = nd["name"].Scalar();
    const int cores = int_field(file, nd["cores"], base + ".cores", 1, 1 << 16);
    for (int k = 0; k < cores; ++k) proto.cores.push_back(k);
    if (const YAML::Node g = nd["gpus"]) {
      if (g.IsSequence()) {
        std::set<std::string> seen;
        for (std::size_t k = 0; k < g.size(); ++k) {
          if (!g[k].IsScalar()) bad(file, g[k], base + ".gpus", "expected device ids");
          if (!seen.insert(g[k].Scalar()).second)
            bad(file, g[k], base + ".gpus", "duplicate device id '" + g[k].Scalar() + "'");
          proto.gpus.push_back(g[k].Scalar());
        }
      } else {
        const int n = int_field(file, g, base + ".gpus", 0, 1024);
        for (int k = 0; k < n; ++k) proto.gpus.push_back(std::to_string(k));
      }
    }
    if (const YAML::Node m = nd["memory_gb"])
      proto.memory_mb = static_cast<std::int64_t>(int_field(file, m, base + ".memory_gb", 0, 1 << 24)) * 1024;
    const int count = nd["count"] ? int_field(file, nd["count"], base + ".count", 1, kMaxClusterNodes) : 1;
    // Bounded in total, not only per entry: the planner keeps a slot per core, and a file of
    // millions of nodes (found by fuzzing, issue 24) is a typo to report, not minutes of planning.
    if (c.nodes.size() + static_cast<std::size_t>(count) > static_cast<std::size_t>(kMaxClusterNodes))
      bad(file, nd["count"] ? nd["count"] : nd, base + ".count",
          "more than " + std::to_string(kMaxClusterNodes) + " nodes in all (gridrun's planning limit)");
    total_cores += static_cast<std::int64_t>(count) * cores;
    if (total_cores > kMaxClusterCores)
      bad(file, nd["cores"], base + ".cores",
          "more than " + std::to_string(kMaxClusterCores) + " cores in all (gridrun's planning limit)");
    for (int k = 0; k < count; ++k) {
      Node n = proto;
      if (count == 1) {
        n.name = name;
      } else {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%0*d", static_cast<int>(std::to_string(count).size()), k + 1);
        n.name = name + buf;
      }
      if (!names.insert(n.name).second)
        bad(file, nd["name"], base + ".name", "duplicate node name '" + n.name + "'");
      c.nodes.push_back(std::move(n));
    }
  }
  return c;
}

Cluster load_cluster_file(const std::string& path) {
  std::string why;
  const auto text = base::try_read_file(path, base::kinds::kClusterFile, &why);
  if (!text) throw std::invalid_argument(why.empty() ? path + ": cannot open cluster file" : why);
  return load_cluster_string(*text, path);
}

namespace {
// Slot k of a node with n GPUs is GPU k % n: the first n slots are distinct GPUs, so a multi-GPU
// job still gets distinct devices while the others are free.
void share_gpus(Cluster& c, int k) {
  if (k < 1 || k > 64)
    throw std::invalid_argument("jobs_per_gpu: the grid's values need " + std::to_string(k) +
                                " slots per GPU (at most 64)");
  if (k == 1) return;
  for (auto& n : c.nodes) {
    const auto real = n.gpus;
    for (int r = 1; r < k; ++r) n.gpus.insert(n.gpus.end(), real.begin(), real.end());
  }
  c.slots_per_gpu = k;
  c.source += ", " + std::to_string(k) + " slots per GPU (jobs_per_gpu)";
}
}  // namespace

Cluster resolve_cluster(const ResourceOptions& o) {
  if (!o.cluster_file.empty()) {
    if (o.gpus >= 0 || o.cores >= 0)
      throw std::invalid_argument(
          "--cluster cannot be combined with --gpus/--cores (describe the nodes in the file)");
    Cluster c = load_cluster_file(o.cluster_file);
    share_gpus(c, o.jobs_per_gpu);
    return c;
  }
  if (o.gpus < -1 || o.gpus > 1024) throw std::invalid_argument("--gpus: must be in [0, 1024]");
  if (o.cores == 0 || o.cores < -1 || o.cores > 65536)
    throw std::invalid_argument("--cores: must be in [1, 65536]");
  Cluster c = detect_local();
  Node& n = c.nodes.front();
  std::ostringstream src;
  src << "this machine";
  if (o.cores > 0) {
    src << ", --cores " << o.cores;
    if (o.cores <= static_cast<int>(n.cores.size())) {
      n.cores.resize(o.cores);  // the first N cpu ids we may run on: still bindable
    } else {
      // More cores than the OS gives us: plan as asked, but jobs cannot be bound to ids that do not
      // exist, so they run unbound (and mpirun gets --oversubscribe where ranks exceed real cores).
      n.cores.clear();
      for (int k = 0; k < o.cores; ++k) n.cores.push_back(k);
      c.bindable = false;
    }
  }
  if (o.gpus >= 0) {
    src << ", --gpus " << o.gpus;
    const auto real = n.gpus;
    n.gpus.clear();
    for (int k = 0; k < o.gpus; ++k)
      n.gpus.push_back(k < static_cast<int>(real.size()) ? real[k] : std::to_string(k));
  }
  c.source = src.str();
  share_gpus(c, o.jobs_per_gpu);
  return c;
}

std::vector<Infeasible> find_infeasible(const std::vector<jobs::Job>& jobs, const Cluster& cluster) {
  int max_cores = 0, max_gpus = 0, max_cores_with_gpus = 0;
  for (const auto& n : cluster.nodes) {
    max_cores = std::max(max_cores, static_cast<int>(n.cores.size()));
    max_gpus = std::max(max_gpus, static_cast<int>(n.gpus.size()));
  }
  std::vector<Infeasible> out;
  for (const auto& job : jobs) {
    const Request r = request_for(job);
    int fitting = 0;
    for (const auto& n : cluster.nodes)
      if (static_cast<int>(n.gpus.size()) >= r.gpus && static_cast<int>(n.cores.size()) >= r.cores &&
          ++fitting >= r.nodes)
        break;
    if (fitting >= r.nodes) continue;
    std::ostringstream why;
    why << "needs " << describe(r) << (r.nodes > 1 ? "; " : " on one node; ");
    if (r.nodes > 1 && fitting > 0) {
      why << "only " << fitting << " of the "
          << base::counted("node", static_cast<long long>(cluster.nodes.size())) << " can hold its share";
    } else if (r.gpus > max_gpus) {
      why << "the largest node has " << max_gpus << (max_gpus == 1 ? " GPU" : " GPUs");
    } else if (r.cores > max_cores) {
      why << "the largest node has " << max_cores << (max_cores == 1 ? " core" : " cores");
    } else {
      for (const auto& n : cluster.nodes)
        if (static_cast<int>(n.gpus.size()) >= r.gpus)
          max_cores_with_gpus = std::max(max_cores_with_gpus, static_cast<int>(n.cores.size()));
      why << "nodes with " << r.gpus << " GPUs have at most " << max_cores_with_gpus << " cores";
    }
    out.push_back({job.id, why.str()});
  }
  return out;
}

namespace {

// A parameter whose values among the jobs that fit are none of its values among those that do not
// (device first: a CPU-only machine is the common case), or "" when no single one does.
std::string separating_key(const std::vector<jobs::Job>& jobs, const std::vector<char>& bad) {
  std::vector<std::string> keys = {"device", "nodes", "ranks", "jobs_per_gpu", "threads"};
  for (const auto& p : jobs::param_table())
    if (std::find(keys.begin(), keys.end(), p.name) == keys.end()) keys.push_back(p.name);
  for (const auto& k : keys) {
    std::set<std::string> fit, unfit;
    for (std::size_t i = 0; i < jobs.size(); ++i)
      (bad[i] ? unfit : fit).insert(jobs::to_string(jobs::get_param(jobs[i].params, k)));
    if (std::none_of(fit.begin(), fit.end(), [&](const std::string& v) { return unfit.count(v) > 0; }))
      return k;
  }
  return "";
}

std::string count_of(std::size_t n, const char* one, const char* many) {
  return std::to_string(n) + " " + (n == 1 ? one : many);
}

// Which jobs need what and the command that runs the rest (check_feasible's second part).
void explain_rest(const std::vector<jobs::Job>& jobs, const std::vector<Infeasible>& bad_jobs,
                  const Cluster& cluster, const std::string& rest_command, std::ostream& os) {
  std::set<std::string> bad_ids;
  for (const auto& b : bad_jobs) bad_ids.insert(b.job_id);
  std::vector<char> bad(jobs.size(), 0);
  for (std::size_t i = 0; i < jobs.size(); ++i)
    bad[i] = static_cast<char>(bad_ids.count(jobs[i].id) > 0 ? 1 : 0);
  const std::size_t fitting = jobs.size() - bad_ids.size();
  const std::string key = separating_key(jobs, bad);
  if (key.empty()) {
    os << "\nNothing was run. No single parameter separates the " << count_of(fitting, "job", "jobs")
       << " that fit from the others";
    if (fitting <= 20) {
      std::string ids;
      for (std::size_t i = 0; i < jobs.size(); ++i)
        if (!bad[i]) ids += (ids.empty() ? "" : ",") + jobs[i].id;
      os << "; `" << rest_command << " --only id=" << ids << "` runs them";
    }
    return;
  }
  // Per value of the key among the jobs that do not fit: how many, what one of them needs, and the
  // limit it meets ("the largest node has 0 GPUs", "this machine has" for a detected machine).
  std::map<std::string, std::vector<std::size_t>> by_value;
  std::set<std::string> rest_values;
  std::vector<std::string> rest_order;
  for (std::size_t i = 0; i < jobs.size(); ++i) {
    const std::string v = jobs::to_string(jobs::get_param(jobs[i].params, key));
    if (bad[i])
      by_value[v].push_back(i);
    else if (rest_values.insert(v).second)
      rest_order.push_back(v);
  }
  for (const auto& [value, members] : by_value) {
    const jobs::Job& first = jobs[members.front()];
    const Request r = request_for(first);
    std::string limit;
    for (const auto& b : bad_jobs)
      if (b.job_id == first.id) limit = b.reason.substr(b.reason.find("; ") + 2);
    if (cluster.source == "this machine" && limit.rfind("the largest node has ", 0) == 0)
      limit = "this machine has " + limit.substr(21);
    os << "\n"
       << count_of(members.size(), "job needs ", "jobs need ") << key << "=" << value << " ("
       << (r.gpus > 0 ? count_of(static_cast<std::size_t>(r.gpus), "GPU", "GPUs")
                      : count_of(static_cast<std::size_t>(r.cores), "core", "cores"))
       << (members.size() == 1 ? "" : " each") << "); " << limit;
  }
  std::string values;
  for (const auto& v : rest_order) values += (values.empty() ? "" : ",") + v;
  os << "\nNothing was run. `" << rest_command << " --only " << key << "=" << values << "` runs the other "
     << count_of(fitting, "job", "jobs");
}

}  // namespace

void check_feasible(const std::vector<jobs::Job>& jobs, const Cluster& cluster,
                    const std::string& rest_command) {
  const auto bad_jobs = find_infeasible(jobs, cluster);
  if (bad_jobs.empty()) return;
  std::ostringstream os;
  os << bad_jobs.size() << " of " << jobs.size() << " jobs fit on no node of " << cluster.source << " ("
     << cluster.nodes.size() << (cluster.nodes.size() == 1 ? " node" : " nodes") << "):";
  for (std::size_t i = 0; i < bad_jobs.size() && i < 10; ++i)
    os << "\n  job " << bad_jobs[i].job_id << ": " << bad_jobs[i].reason;
  if (bad_jobs.size() > 10) os << "\n  ... and " << bad_jobs.size() - 10 << " more";
  if (!rest_command.empty() && bad_jobs.size() < jobs.size())
    explain_rest(jobs, bad_jobs, cluster, rest_command, os);
  throw std::invalid_argument(os.str());
}

}  // namespace gridrun::scheduler
