// Submission, status and cancel of a run through Slurm; see submit.hpp for the design.
#include "gridrun/slurm/submit.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <ostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "gridrun/jobs/grid.hpp"
#include "gridrun/jobs/json.hpp"
#include "gridrun/jobs/params.hpp"
#include "gridrun/results/reader.hpp"
#include "gridrun/scheduler/placement.hpp"
#include "gridrun/scheduler/resources.hpp"
#include "gridrun/slurm/process.hpp"

namespace fs = std::filesystem;

namespace gridrun::slurm {
namespace {

using scheduler::JobState;

std::string read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return {};
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

void write_if_changed(const std::string& path, const std::string& text) {
  if (fs::exists(path) && read_file(path) == text) return;
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw std::runtime_error("cannot write " + tmp);
    f << text;
    if (!f.flush()) throw std::runtime_error("write failed: " + tmp);
  }
  fs::rename(tmp, path);
}

std::string submitted_file(const scheduler::RunDir& rd) { return rd.slurm_dir() + "/submitted.tsv"; }

struct SubmittedLine {
  int submission = 0;
  std::string kind, name, id;  // kind: array | collect
};

std::vector<SubmittedLine> read_submitted(const scheduler::RunDir& rd) {
  std::vector<SubmittedLine> out;
  std::istringstream is(read_file(submitted_file(rd)));
  std::string l;
  while (std::getline(is, l)) {
    if (l.empty() || l[0] == '#') continue;
    std::istringstream ls(l);
    SubmittedLine s;
    if (ls >> s.submission >> s.kind >> s.name >> s.id) out.push_back(s);
  }
  return out;
}

void append_submitted(const scheduler::RunDir& rd, const SubmittedLine& s) {
  const std::string path = submitted_file(rd);
  const bool fresh = !fs::exists(path);
  std::ofstream f(path, std::ios::app);
  if (!f) throw std::runtime_error("cannot append to " + path);
  if (fresh) f << "# submission\tkind\tname\tslurm_id (appended by gridrun submit)\n";
  f << s.submission << '\t' << s.kind << '\t' << s.name << '\t' << s.id << '\n';
  if (!f.flush()) throw std::runtime_error("write failed: " + path);
}

std::string base_id(const std::string& slurm_id) { return slurm_id.substr(0, slurm_id.find('_')); }

}  // namespace

Packing pack_jobs(const std::vector<jobs::Job>& all, int node_gpus, int node_cores,
                  const ScriptOptions& opts) {
  Packing p;
  std::vector<const jobs::Job*> small;
  std::vector<Shape> shapes;
  for (const auto& j : all) {
    Shape s = job_shape(j, opts);
    if (s.device == "gpu" && s.ranks < node_gpus && s.ranks * s.threads <= node_cores) {
      small.push_back(&j);
      shapes.push_back(s);
    } else {
      p.rest.push_back(j);
    }
  }
  if (small.empty()) return p;
  // The scheduler's own engine and `packed` policy place every small job at once on a cluster of
  // identical empty nodes (as many as jobs, so nothing waits): each node it uses becomes one
  // whole-node allocation, and each job's allocation gives the GPU and core ids of its step.
  scheduler::Cluster cluster;
  cluster.source = "slurm node packing";
  scheduler::Node node;
  for (int c = 0; c < node_cores; ++c) node.cores.push_back(c);
  for (int g = 0; g < node_gpus; ++g) node.gpus.push_back(std::to_string(g));
  cluster.nodes.assign(small.size(), node);
  for (std::size_t i = 0; i < small.size(); ++i) cluster.nodes[i].name = "n" + std::to_string(i);
  scheduler::EngineOptions eo;
  eo.policy = "packed";
  scheduler::Engine engine(cluster, eo);
  for (std::size_t i = 0; i < small.size(); ++i) {
    scheduler::QueuedJob q;
    q.key = i;
    q.order = i;
    q.req = scheduler::request_for(*small[i]);
    q.est_s = std::max<double>(1.0, static_cast<double>(shapes[i].time_s));
    engine.submit(q);
  }
  std::vector<scheduler::Start> starts = engine.schedule(0.0);
  if (starts.size() != small.size())
    throw std::logic_error("node packing placed " + std::to_string(starts.size()) + " of " +
                           std::to_string(small.size()) + " jobs");
  // Bundles in node order; steps in grid order within a bundle.
  std::sort(starts.begin(), starts.end(), [](const scheduler::Start& a, const scheduler::Start& b) {
    return a.alloc.node != b.alloc.node ? a.alloc.node < b.alloc.node : a.key < b.key;
  });
  int current = -1;
  for (const auto& st : starts) {
    if (st.alloc.node != current) {
      p.bundles.emplace_back();
      current = st.alloc.node;
    }
    PackedStep step;
    step.job_id = small[st.key]->id;
    step.ranks = shapes[st.key].ranks;
    step.threads = shapes[st.key].threads;
    step.time_s = shapes[st.key].time_s;
    step.gpus = scheduler::gpus_string(cluster, st.alloc);
    step.cores = scheduler::cores_string(cluster, st.alloc);
    p.bundles.back().push_back(std::move(step));
  }
  return p;
}

SubmitResult submit(const SubmitOptions& opts, const SlurmCli& cli, std::ostream& log) {
  jobs::Expansion exp = jobs::load_grid(opts.grid_file);
  SubmitResult res;
  const std::string out_abs = fs::absolute(opts.out_dir).lexically_normal().string();
  res.run_dir = out_abs + "/" + exp.name;
  scheduler::RunDir rd(res.run_dir);
  rd.create_layout();
  fs::create_directories(rd.slurm_dir());  // create_layout() leaves slurm/ to us
  write_if_changed(res.run_dir + "/grid.yaml", read_file(opts.grid_file));

  // What is already done or queued is left alone.
  RunStatus before = run_status(res.run_dir, &cli);
  std::map<std::string, JobState> known;
  for (const auto& r : before.jobs) known[r.id] = r.state;
  std::vector<jobs::Job> todo;
  for (const auto& j : exp.jobs) {
    auto it = known.find(j.id);
    const bool skip = it != known.end() &&
                      (it->second == JobState::Completed || it->second == JobState::TargetReached ||
                       it->second == JobState::Submitted || it->second == JobState::Running);
    if (skip) ++res.skipped_jobs;
    else todo.push_back(j);
  }
  res.total_jobs = exp.jobs.size();

  ScriptOptions so = opts.script;
  so.run_dir = res.run_dir;
  so.run_name = exp.name;
  so.grid_file = fs::absolute(opts.grid_file).lexically_normal().string();
  so.out_dir = out_abs;
  so.pack_nodes = opts.pack_nodes;
  int last = 0;
  const auto submitted = read_submitted(rd);
  for (const auto& s : submitted) last = std::max(last, s.submission);
  so.submission = last + 1;
  if (opts.max_array) {
    so.max_array = *opts.max_array;
  } else {
    auto m = cli.max_array_size();
    so.max_array = m && *m > 0 ? *m : 1000;  // indices 0..MaxArraySize-1: MaxArraySize tasks
  }

  std::vector<Bundle> bundles;
  std::vector<jobs::Job> plain = todo;
  if (opts.pack_nodes) {
    int cores = 0;
    if (opts.node_cores) cores = *opts.node_cores;
    else if (auto c = cli.node_cpus(so.partition)) cores = *c;
    if (cores <= 0)
      throw std::invalid_argument("--node-cores: needed with --pack-nodes when sinfo cannot tell");
    Packing pk = pack_jobs(todo, static_cast<int>(so.node_gpus), cores, so);
    bundles = std::move(pk.bundles);
    plain = std::move(pk.rest);
  }

  // Job files first (packed steps record their planned GPUs and cores), then scripts. Files of
  // jobs that are not submitted now are left as they are (a finished job's file says how it ran).
  std::map<std::string, std::pair<std::string, std::string>> planned;
  for (const auto& b : bundles)
    for (const auto& st : b) planned[st.job_id] = {st.gpus, st.cores};
  std::set<std::string> submitting;
  for (const auto& j : todo) submitting.insert(j.id);
  for (auto j : exp.jobs) {
    if (!submitting.count(j.id) && fs::exists(rd.job_file(j.id))) continue;
    if (auto it = planned.find(j.id); it != planned.end()) {
      // Planned by the placement; under srun Slurm's per-step GRES picks the actual devices.
      j.meta["planned_gpus"] = it->second.first;
      j.meta["planned_cores"] = it->second.second;
      j.meta["packed"] = "true";
    }
    j.meta["launcher"] = "slurm";
    write_if_changed(rd.job_file(j.id), jobs::job_to_json(j));
  }
  scheduler::RunState state = rd.load_state();
  state.name = exp.name;
  for (const auto& j : exp.jobs) {
    auto& r = state.jobs[j.id];
    r.id = j.id;
  }
  rd.save_state(state);

  if (todo.empty()) {
    log << "gridrun submit: all " << res.total_jobs << " jobs of '" << exp.name
        << "' are completed, pending or running; nothing to submit\n";
    return res;
  }
  res.scripts = generate_scripts(plain, bundles, so);
  write_script_set(res.scripts);
  if (opts.dry_run) {
    res.submitted_jobs = 0;
    return res;
  }

  // Arrays of earlier submissions that are still queued: the new collect job waits for them too.
  std::vector<std::string> old_arrays;
  for (const auto& s : submitted)
    if (s.kind == "array") old_arrays.push_back(s.id);
  std::vector<std::string> deps = cli.active(old_arrays);

  for (const auto& a : res.scripts.arrays) {
    const std::string id = cli.sbatch(a.script_path);
    res.array_ids.push_back(id);
    deps.push_back(id);
    append_submitted(rd, {so.submission, "array", a.name, id});
    for (std::size_t t = 0; t < a.tasks.size(); ++t) {
      for (const auto& jid : a.tasks[t]) {
        auto& r = state.jobs[jid];
        r.slurm_job_id = id + "_" + std::to_string(t);
        r.state = JobState::Submitted;
        r.attempts += 1;
        ++res.submitted_jobs;
      }
    }
    rd.save_state(state);  // after every array: an interrupted submit loses no id
    log << "gridrun submit: " << a.name << " -> Slurm job " << id << " (" << a.tasks.size()
        << " task(s))\n";
  }
  std::string dep = "--dependency=afterany";
  for (const auto& d : deps) dep += ":" + d;
  res.collect_id = cli.sbatch(res.scripts.collect_path, {dep});
  append_submitted(rd, {so.submission, "collect", "collect", res.collect_id});
  log << "gridrun submit: collect -> Slurm job " << res.collect_id << " (" << dep << ")\n";
  return res;
}

RunStatus run_status(const std::string& run_dir, const SlurmCli* cli) {
  scheduler::RunDir rd(run_dir);
  if (!fs::exists(run_dir) || !fs::is_directory(run_dir))
    throw std::invalid_argument("RUN_DIR: '" + run_dir + "' is not a directory");
  if (!fs::exists(rd.state_file()) && !fs::exists(run_dir + "/jobs"))
    throw std::invalid_argument("RUN_DIR: '" + run_dir + "' has no state.json and no jobs/ (not a run directory)");
  RunStatus st;
  st.run_dir = run_dir;
  // Files gridrun (or gridrun-train) renamed *.damaged instead of trusting them.
  {
    std::error_code dec;
    for (auto it = fs::recursive_directory_iterator(run_dir, dec); !dec && it != fs::recursive_directory_iterator();
         it.increment(dec))
      if (it->path().filename().string().find(".damaged") != std::string::npos)
        st.damaged.push_back(fs::relative(it->path(), run_dir, dec).string());
    std::sort(st.damaged.begin(), st.damaged.end());
  }
  scheduler::RunState state;
  try {
    state = rd.load_state();
  } catch (const std::exception& e) {
    // Read-only here: the next `gridrun run` quarantines it; states come from the results files.
    st.damaged.push_back("state.json (" + std::string(e.what()) + ")");
  }
  st.name = state.name.empty() ? fs::path(run_dir).filename().string() : state.name;
  // Jobs known from state.json and from job files (a crashed submit may have written only those).
  std::map<std::string, scheduler::JobRecord> recs = state.jobs;
  std::error_code ec;
  for (const auto& e : fs::directory_iterator(run_dir + "/jobs", ec)) {
    if (e.path().extension() != ".json") continue;
    const std::string id = e.path().stem().string();
    if (!recs.count(id)) recs[id].id = id;
  }
  std::vector<std::string> ids;
  std::set<std::string> seen;
  for (const auto& [id, r] : recs) {
    if (r.slurm_job_id.empty()) continue;
    if (seen.insert(base_id(r.slurm_job_id)).second) ids.push_back(base_id(r.slurm_job_id));
  }
  for (const auto& s : read_submitted(rd))
    if (s.kind == "collect") st.collect_ids.push_back(s.id);
  std::map<std::string, SlurmTask> tasks;
  st.slurm_queried = !ids.empty() && cli;
  if (st.slurm_queried) {
    std::vector<std::string> all = ids;
    if (!st.collect_ids.empty()) all.push_back(st.collect_ids.back());
    tasks = cli->query(all, &st.slurm_answered);
    if (!st.collect_ids.empty()) {
      auto it = tasks.find(st.collect_ids.back());
      st.collect_state = it == tasks.end() ? "unknown to Slurm" : it->second.state;
      if (it != tasks.end() && !it->second.reason.empty()) st.collect_state += " (" + it->second.reason + ")";
    }
  }

  for (const auto& [id, r] : recs) {
    JobStatusRow row;
    row.id = id;
    row.state = r.state;
    row.attempts = r.attempts;
    row.slurm_id = r.slurm_job_id;
    if (!r.exit_codes.empty()) row.exit_code = r.exit_codes.back();
    row.node = r.host;
    if (r.end_unix > r.start_unix && r.start_unix > 0) {  // local runs: timings from state.json
      const auto sec = static_cast<long long>(r.end_unix - r.start_unix + 0.5);
      char buf[32];
      std::snprintf(buf, sizeof buf, "%02lld:%02lld:%02lld", sec / 3600, sec / 60 % 60, sec % 60);
      row.elapsed = buf;
    }
    const std::string final_file = rd.result_file(id);
    row.disk = results::job_status(final_file);
    if (row.disk.empty() && fs::exists(final_file + ".partial")) row.disk = "partial";

    bool from_slurm = false;
    if (!r.slurm_job_id.empty() && st.slurm_queried) {
      auto it = tasks.find(r.slurm_job_id);
      if (it != tasks.end()) {
        const SlurmTask& t = it->second;
        row.slurm_state = t.state;
        row.elapsed = t.elapsed;
        row.node = t.node;
        row.restarts = t.restarts;
        row.exit_code = t.exit_code;
        row.state = map_slurm_state(t.state, t.exit_code);
        from_slurm = true;
      } else if (st.slurm_answered && (r.state == JobState::Submitted || r.state == JobState::Running)) {
        // Slurm forgot the job (older than MinJobAge, no accounting): the disk must tell.
        row.state = JobState::Interrupted;
      }
    }
    // The results file is the final word on how a job ended.
    if (row.disk == "completed") row.state = JobState::Completed;
    else if (row.disk == "target_reached") row.state = JobState::TargetReached;
    else if (row.disk == "failed" && row.state != JobState::Running && row.state != JobState::Submitted)
      row.state = JobState::Failed;
    else if (from_slurm && row.state == JobState::Completed && row.disk != "completed")
      row.state = row.disk == "interrupted" ? JobState::Interrupted : JobState::Failed;
    st.counts[row.state] += 1;
    st.jobs.push_back(std::move(row));
  }
  return st;
}

namespace {
using jobs::json_escape;
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string o = "\"";
  for (char c : s) o += c == '"' ? std::string("\"\"") : std::string(1, c);
  return o + "\"";
}
}  // namespace

void print_status(const RunStatus& st, StatusFormat fmt, std::ostream& os) {
  using scheduler::to_string;
  if (fmt == StatusFormat::Json) {
    os << "{\"run\":\"" << json_escape(st.name) << "\",\"run_dir\":\"" << json_escape(st.run_dir)
       << "\",\"slurm_answered\":" << (st.slurm_answered ? "true" : "false") << ",\"collect_id\":\""
       << (st.collect_ids.empty() ? "" : st.collect_ids.back()) << "\",\"collect_state\":\""
       << json_escape(st.collect_state) << "\",\"counts\":{";
    bool first = true;
    for (const auto& [s, n] : st.counts) {
      os << (first ? "" : ",") << "\"" << to_string(s) << "\":" << n;
      first = false;
    }
    os << "},\"damaged\":[";
    for (std::size_t i = 0; i < st.damaged.size(); ++i)
      os << (i ? "," : "") << "\"" << json_escape(st.damaged[i]) << "\"";
    os << "],\"jobs\":[";
    for (std::size_t i = 0; i < st.jobs.size(); ++i) {
      const auto& r = st.jobs[i];
      os << (i ? "," : "") << "{\"id\":\"" << r.id << "\",\"state\":\"" << to_string(r.state)
         << "\",\"slurm_id\":\"" << json_escape(r.slurm_id) << "\",\"slurm_state\":\""
         << json_escape(r.slurm_state) << "\",\"exit_code\":" << r.exit_code << ",\"elapsed\":\""
         << json_escape(r.elapsed) << "\",\"node\":\"" << json_escape(r.node) << "\",\"restarts\":"
         << r.restarts << ",\"attempts\":" << r.attempts << ",\"results\":\""
         << json_escape(r.disk) << "\"}";
    }
    os << "]}\n";
    return;
  }
  if (fmt == StatusFormat::Csv) {
    os << "id,state,slurm_id,slurm_state,exit_code,elapsed,node,restarts,attempts,results\n";
    for (const auto& r : st.jobs)
      os << r.id << ',' << to_string(r.state) << ',' << csv_field(r.slurm_id) << ','
         << csv_field(r.slurm_state) << ',' << r.exit_code << ',' << csv_field(r.elapsed) << ','
         << csv_field(r.node) << ',' << r.restarts << ',' << r.attempts << ',' << csv_field(r.disk)
         << '\n';
    return;
  }
  os << "run " << st.name << " (" << st.run_dir << "): " << st.jobs.size() << " jobs";
  for (const auto& [s, n] : st.counts) os << ", " << n << " " << to_string(s);
  os << "\n";
  if (st.slurm_queried && !st.slurm_answered)
    os << "note: Slurm did not answer; states come from state.json and results files\n";
  for (const auto& d : st.damaged) os << "damaged (quarantined, not used): " << d << "\n";
  if (!st.collect_ids.empty())
    os << "collect job " << st.collect_ids.back() << ": " << st.collect_state
       << (std::filesystem::exists(st.run_dir + "/results.h5") ? "; results.h5 present" : "; no results.h5 yet")
       << "\n";
  char line[160];
  std::snprintf(line, sizeof line, "%-12s  %-14s  %-12s  %-11s  %4s  %-10s  %-10s  %3s  %s\n", "JOB",
                "STATE", "SLURM ID", "SLURM", "EXIT", "ELAPSED", "NODE", "RQ", "RESULTS");
  os << line;
  for (const auto& r : st.jobs) {
    std::string exit = r.exit_code < 0 ? "-" : std::to_string(r.exit_code);
    std::snprintf(line, sizeof line, "%-12.12s  %-14.14s  %-12.12s  %-11.11s  %4s  %-10.10s  %-10.10s  %3d  %s\n",
                  r.id.c_str(), to_string(r.state).c_str(), r.slurm_id.empty() ? "-" : r.slurm_id.c_str(),
                  r.slurm_state.empty() ? "-" : r.slurm_state.c_str(), exit.c_str(),
                  r.elapsed.empty() ? "-" : r.elapsed.c_str(), r.node.empty() ? "-" : r.node.c_str(),
                  r.restarts, r.disk.empty() ? "-" : r.disk.c_str());
    os << line;
  }
}

CancelResult cancel_run(const std::string& run_dir, const SlurmCli& cli, double wait_s,
                        std::ostream& log) {
  scheduler::RunDir rd(run_dir);
  if (!fs::is_directory(run_dir)) throw std::invalid_argument("RUN_DIR: '" + run_dir + "' is not a directory");
  scheduler::RunState state = rd.load_state();
  std::vector<std::string> ids;
  std::set<std::string> seen;
  auto add = [&](const std::string& id) {
    if (!id.empty() && seen.insert(id).second) ids.push_back(id);
  };
  for (const auto& s : read_submitted(rd)) add(s.id);
  for (const auto& [id, r] : state.jobs) add(base_id(r.slurm_job_id));
  CancelResult res;
  res.cancelled = cli.active(ids);
  if (res.cancelled.empty()) {
    log << "gridrun cancel: no job of " << run_dir << " is queued or running\n";
  } else {
    cli.scancel(res.cancelled);
    log << "gridrun cancel: scancel " << res.cancelled.size() << " Slurm job(s)\n";
  }
  // Bounded poll until squeue has let go of them (scancel only asks slurmctld).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(wait_s);
  while (!(res.drained = cli.active(res.cancelled).empty()) &&
         std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  for (auto& [id, r] : state.jobs)
    if (r.state == JobState::Submitted || r.state == JobState::Running) r.state = JobState::Interrupted;
  rd.save_state(state);
  if (!res.drained) log << "gridrun cancel: some jobs are still listed by squeue after " << wait_s << " s\n";
  return res;
}

}  // namespace gridrun::slurm
