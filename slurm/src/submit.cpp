// Submission, status and cancel of a run through Slurm; see submit.hpp for the design.
#include "gridrun/slurm/submit.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <ostream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/jobs/grid.hpp"
#include "gridrun/jobs/params.hpp"
#include "gridrun/jobs/select.hpp"
#include "gridrun/run/prepare.hpp"
#include "gridrun/scheduler/placement.hpp"
#include "gridrun/scheduler/resources.hpp"

namespace fs = std::filesystem;

namespace gridrun::slurm {
namespace {

using run::JobOutcome;

// A job's state as submit judges it: a job whose Slurm task is still queued or running counts as
// queued, even when status shows it ended (a chain's earlier job): a new task would remove its
// slurm/ended/ file at its start, and a requeue of the old task would then run it a second time.
JobOutcome state_for_submit(const status::JobStatusRow& r) {
  const bool task_alive = !r.slurm_state.empty() && run::is_queued(map_slurm_state(r.slurm_state, 0));
  return task_alive ? JobOutcome::Submitted : r.state;
}

struct SubmittedLine {
  int submission = 0;
  std::string kind, name, id;  // kind: array | collect
};

std::vector<SubmittedLine> read_submitted(const run::RunDir& rd) {
  std::vector<SubmittedLine> out;
  std::istringstream is(base::try_read_file(rd.submitted_file(), base::kinds::kSubmittedList).value_or(""));
  std::string l;
  while (std::getline(is, l)) {
    if (l.empty() || l[0] == '#') continue;
    std::istringstream ls(l);
    SubmittedLine s;
    if (ls >> s.submission >> s.kind >> s.name >> s.id) out.push_back(s);
  }
  return out;
}

// Appended line by line (not rewritten): an interrupted submit must lose no id it got from sbatch.
void append_submitted(const run::RunDir& rd, const SubmittedLine& s) {
  const std::string path = rd.submitted_file();
  const bool fresh = !fs::exists(path);
  std::ofstream f(path, std::ios::app);
  if (!f) throw std::runtime_error("cannot append to " + path);
  if (fresh) f << "# submission\tkind\tname\tslurm_id (appended by gridrun submit)\n";
  f << s.submission << '\t' << s.kind << '\t' << s.name << '\t' << s.id << '\n';
  if (!f.flush()) throw std::runtime_error("write failed: " + path);
}

std::string base_id(const std::string& slurm_id) { return slurm_id.substr(0, slurm_id.find('_')); }

// "--dependency=afterany:1:2" (sbatch waits until every listed job ended, however).
std::string afterany(const std::vector<std::string>& ids) {
  std::string dep = "--dependency=afterany";
  for (const auto& id : ids) dep += ":" + id;
  return dep;
}

// The compare-by phase of job `job` of the grid in its launcher facts (none when the grid has
// no compare-by): arrays are cut per phase (script.cpp job_shape) and the report reads it back.
void add_phase(const jobs::Expansion& exp, jobs::Job& job) {
  if (const std::string phase = run::phase_of(exp, job.index); !phase.empty()) job.meta["phase"] = phase;
}

// --rerun phase=VALUE: the phase's finished jobs join `todo`, and every job of the phase starts
// from scratch (its checkpoints go; the task body resumes whenever a checkpoint exists). Refused
// while one of them is still queued (cancel first), before anything is changed.
void rerun_phase(const jobs::Expansion& exp, const run::RunDir& rd, const std::string& rerun,
                 const SlurmCli& cli, std::vector<jobs::Job>& todo, SubmitResult& res) {
  if (rerun.rfind("phase=", 0) != 0)
    throw std::invalid_argument("--rerun: expected 'phase=VALUE', got '" + rerun + "'");
  const std::string value = rerun.substr(6);
  if (exp.compare_by.empty())
    throw std::invalid_argument("--rerun " + rerun + ": the grid has no compare: {by: KEY}, so no phases");
  std::set<std::string> phases, in_todo;
  for (std::size_t i = 0; i < exp.jobs.size(); ++i) phases.insert(run::phase_of(exp, i));
  if (!phases.count(value)) {
    std::string known;
    for (const auto& p : phases) known += (known.empty() ? "" : ", ") + p;
    throw std::invalid_argument("--rerun " + rerun + ": no phase " + exp.compare_by + "=" + value +
                                " in this grid (phases: " + known + ")");
  }
  const status::RunStatus st = run_status(rd.root(), &cli);
  std::map<std::string, run::JobOutcome> state;
  for (const auto& r : st.jobs) state[r.id] = state_for_submit(r);
  for (const auto& j : todo) in_todo.insert(j.id);
  std::vector<const jobs::Job*> phase_jobs;
  for (std::size_t i = 0; i < exp.jobs.size(); ++i)
    if (run::phase_of(exp, i) == value) phase_jobs.push_back(&exp.jobs[i]);
  for (const jobs::Job* j : phase_jobs)
    if (const auto it = state.find(j->id); it != state.end() && run::is_queued(it->second))
      throw std::invalid_argument("--rerun " + rerun + ": job " + j->id +
                                  " of that phase is still queued or running; `gridrun cancel " + rd.root() +
                                  "` first");
  std::error_code ec;
  for (const jobs::Job* j : phase_jobs) {
    fs::remove_all(rd.checkpoint_dir(j->id), ec);
    if (in_todo.insert(j->id).second) {
      todo.push_back(*j);
      --res.skipped_jobs;
    }
  }
  std::stable_sort(todo.begin(), todo.end(),
                   [](const jobs::Job& a, const jobs::Job& b) { return a.index < b.index; });
}

}  // namespace

Packing pack_jobs(const std::vector<jobs::Job>& all, int node_gpus, int node_cores,
                  const ScriptOptions& opts) {
  Packing p;
  std::vector<const jobs::Job*> small;
  std::vector<Shape> shapes;
  for (const auto& j : all) {
    Shape s = job_shape(j, opts);
    // A GPU job on one node that leaves some of the node's GPUs free and fits its cores.
    if (s.fp.gpus > 0 && s.fp.nodes == 1 && s.fp.gpus < node_gpus && s.fp.cores <= node_cores) {
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
    q.req = scheduler::request_for(shapes[i].fp);
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
    step.ranks = shapes[st.key].fp.ranks;
    step.threads = shapes[st.key].fp.threads_per_rank;
    step.time_s = shapes[st.key].time_s;
    step.gpus = scheduler::gpus_string(cluster, st.alloc);
    step.cores = scheduler::cores_string(cluster, st.alloc);
    p.bundles.back().push_back(std::move(step));
  }
  return p;
}

namespace {

// Jobs that are neither finished nor queued, judged as `gridrun status` judges them.
std::vector<jobs::Job> jobs_to_submit(const jobs::Expansion& exp, const std::string& run_dir,
                                      const SlurmCli& cli, SubmitResult& res) {
  const status::RunStatus before = run_status(run_dir, &cli);
  std::map<std::string, run::JobOutcome> known;
  for (const auto& r : before.jobs) known[r.id] = state_for_submit(r);
  std::vector<jobs::Job> todo;
  for (const auto& j : exp.jobs) {
    auto it = known.find(j.id);
    if (it != known.end() && (run::is_finished(it->second) || run::is_queued(it->second)))
      ++res.skipped_jobs;
    else
      todo.push_back(j);
  }
  return todo;
}

// The script options as given, with the submission's --set and --only for the resubmit hint.
ScriptOptions with_hint_args(const SubmitOptions& opts) {
  ScriptOptions so = opts.script;
  so.set_args = run::override_texts(opts.overrides);
  so.only_args.clear();
  for (const auto& sel : opts.only) so.only_args.push_back(sel.text);
  return so;
}

// The script options of this submission: the run's paths, the next submission number and the
// array size limit (MaxArraySize unless given).
ScriptOptions script_options(const SubmitOptions& opts, const jobs::Expansion& exp,
                             const std::string& run_dir, const std::vector<SubmittedLine>& submitted,
                             const SlurmCli& cli) {
  ScriptOptions so = with_hint_args(opts);
  so.run_dir = run_dir;
  so.run_name = exp.name;
  so.grid_file = fs::absolute(opts.grid_file).lexically_normal().string();
  so.out_dir = fs::absolute(opts.out_dir).lexically_normal().string();
  so.pack_nodes = opts.pack_nodes;
  // A command grid (every job model=command): the tasks start gridrun-exec, which maps srun's or
  // mpirun's rank variables onto torch.distributed's and meets its ranks through the run folder;
  // cold, since a warm worker is gridrun-train's.
  if (!exp.jobs.empty() && jobs::model_kind(exp.jobs.front().params) == jobs::ModelKind::command) {
    so.train_bin = so.exec_bin;
    so.launch = run::Launch::Cold;
  }
  int last = 0;
  for (const auto& s : submitted) last = std::max(last, s.submission);
  so.submission = last + 1;
  if (opts.max_array) {
    so.max_array = *opts.max_array;
  } else {
    auto m = cli.max_array_size();
    so.max_array = m && *m > 0 ? std::min(*m, kMaxArrayTasks) : 1000;  // indices 0..MaxArraySize-1
  }
  return so;
}

// Job files of the jobs submitted now (packed steps record their planned GPUs and cores) and of
// jobs that have none yet; a finished job's file is left as it is (it says how it ran).
void write_job_files(const run::RunDir& rd, const jobs::Expansion& exp, const std::vector<jobs::Job>& todo,
                     const std::vector<Bundle>& bundles, int submission) {
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
    // The sitting its attempts record (a requeue adds one with restart_count > 0; report/phases.hpp).
    if (submitting.count(j.id)) j.meta["sitting"] = "submit-" + std::to_string(submission);
    add_phase(exp, j);
    const std::string text = jobs::job_to_json(j);
    if (base::try_read_file(rd.job_file(j.id), base::kinds::kJobFile) != text)
      base::write_file_atomic(rd.job_file(j.id), text);
  }
}

// sbatch for every array (state saved after each: an interrupted submit loses no id), then the
// collect job after all of them and after arrays of earlier submissions still queued.
void submit_scripts(const run::RunDir& rd, const ScriptOptions& so,
                    const std::vector<SubmittedLine>& submitted, run::RunState& state, const SlurmCli& cli,
                    SubmitResult& res, std::ostream& log) {
  std::vector<std::string> old_arrays;
  for (const auto& s : submitted)
    if (s.kind == "array") old_arrays.push_back(s.id);
  std::vector<std::string> deps = cli.active(old_arrays);
  // Compare-by phases run one after another, as `gridrun run` runs them: each phase's arrays wait
  // for every array of the phase before (afterany: a failed job must not stall the comparison).
  std::vector<std::string> phase_order;
  for (const auto& a : res.scripts.arrays)
    if (std::find(phase_order.begin(), phase_order.end(), a.shape.phase) == phase_order.end())
      phase_order.push_back(a.shape.phase);
  std::map<std::string, std::vector<std::string>> phase_ids;
  std::vector<const ArrayScript*> arrays;
  for (const auto& p : phase_order)
    for (const auto& a : res.scripts.arrays)
      if (a.shape.phase == p) arrays.push_back(&a);
  for (const ArrayScript* ap : arrays) {
    const ArrayScript& a = *ap;
    std::vector<std::string> extra;
    const auto at = std::find(phase_order.begin(), phase_order.end(), a.shape.phase);
    if (at != phase_order.begin()) extra.push_back(afterany(phase_ids[*(at - 1)]));
    const std::string id = cli.sbatch(a.script_path, extra);
    phase_ids[a.shape.phase].push_back(id);
    res.array_ids.push_back(id);
    deps.push_back(id);
    append_submitted(rd, {so.submission, "array", a.name, id});
    for (std::size_t t = 0; t < a.tasks.size(); ++t) {
      for (const auto& jid : a.tasks[t]) {
        auto& r = state.jobs[jid];
        r.slurm_job_id = id + "_" + std::to_string(t);
        r.state = run::JobOutcome::Submitted;
        r.attempts += 1;
        ++res.submitted_jobs;
      }
    }
    rd.save_state(state);
    log << "gridrun submit: " << a.name << " -> Slurm job " << id << " (" << a.tasks.size() << " task(s)"
        << (extra.empty() ? "" : ", phase " + a.shape.phase + " " + extra.front()) << ")\n";
  }
  const std::string dep = afterany(deps);
  res.collect_id = cli.sbatch(res.scripts.collect_path, {dep});
  append_submitted(rd, {so.submission, "collect", "collect", res.collect_id});
  log << "gridrun submit: collect -> Slurm job " << res.collect_id << " (" << dep << ")\n";
}

}  // namespace

SubmitResult submit(const SubmitOptions& opts, const SlurmCli& cli, std::ostream& log) {
  // --set and --only reach the scripts' resubmit hint: a value no script can hold (a newline) is
  // refused before the run directory exists, like every other flag's.
  check_script_options(with_hint_args(opts));
  jobs::LoadOptions lo;
  lo.check_data_file = opts.check_data_file;
  lo.check_model_file = opts.check_model_file;
  lo.overrides = opts.overrides;
  lo.repeats = opts.repeats;
  lo.warn_lost_compare = true;
  const jobs::Expansion exp = jobs::load_grid(opts.grid_file, lo);
  if (!exp.compare_gone.empty()) std::cerr << "warning: " << exp.compare_gone << "\n";
  if (!opts.only.empty()) {
    const std::vector<jobs::Job> selected =
        jobs::select_jobs(exp.jobs, opts.only);  // selecting none: exit 2, nothing written
    if (const std::string w = jobs::lost_compare_warning(exp, selected, opts.only); !w.empty())
      std::cerr << "warning: " << w << "\n";
  }
  SubmitResult res;
  res.run_dir =
      run::RunDir::for_grid(fs::absolute(opts.out_dir).lexically_normal().string(), exp.name).root();
  const run::RunDir rd(res.run_dir);
  run::PreparedRun prepared =
      run::prepare_run(rd, exp,
                       run::PrepareOptions{opts.grid_file, /*lock=*/false, /*slurm_dir=*/true,
                                           run::override_texts(opts.overrides), opts.repeats},
                       log);
  res.total_jobs = exp.jobs.size();
  std::vector<jobs::Job> todo = jobs_to_submit(exp, res.run_dir, cli, res);
  if (!opts.rerun.empty()) rerun_phase(exp, rd, opts.rerun, cli, todo, res);
  if (!opts.only.empty())
    todo.erase(
        std::remove_if(todo.begin(), todo.end(),
                       [&](const jobs::Job& j) { return !jobs::matches_all(opts.only, j.params, j.id); }),
        todo.end());
  for (auto& j : todo) add_phase(exp, j);
  const auto submitted = read_submitted(rd);
  const ScriptOptions so = script_options(opts, exp, res.run_dir, submitted, cli);

  std::vector<Bundle> bundles;
  std::vector<jobs::Job> plain = todo;
  if (opts.pack_nodes) {
    int cores = 0;
    if (opts.node_cores)
      cores = *opts.node_cores;
    else if (auto c = cli.node_cpus(so.partition))
      cores = *c;
    if (cores <= 0)
      throw std::invalid_argument("--node-cores: needed with --pack-nodes when sinfo cannot tell");
    Packing pk = pack_jobs(todo, static_cast<int>(so.node_gpus), cores, so);
    bundles = std::move(pk.bundles);
    plain = std::move(pk.rest);
  }
  write_job_files(rd, exp, todo, bundles, so.submission);
  rd.save_state(prepared.state);

  if (todo.empty()) {
    log << "gridrun submit: all " << res.total_jobs << " jobs of '" << exp.name
        << "' are completed, pending or running; nothing to submit\n";
    return res;
  }
  res.scripts = generate_scripts(plain, bundles, so);
  write_script_set(res.scripts);
  if (!opts.dry_run) submit_scripts(rd, so, submitted, prepared.state, cli, res, log);
  return res;
}

status::RunStatus run_status(const std::string& run_dir, const SlurmCli* cli) {
  const run::RunDir rd(run_dir);
  const std::vector<SubmittedLine> submitted =
      fs::is_directory(run_dir) ? read_submitted(rd) : std::vector<SubmittedLine>{};
  // Slurm's view of the run's arrays and latest collect job, over the rows from the disk.
  auto overlay = [&](status::RunStatus& st, const std::map<std::string, run::JobRecord>& recs) {
    std::vector<std::string> ids;
    std::set<std::string> seen;
    for (const auto& [id, r] : recs)
      if (!r.slurm_job_id.empty() && seen.insert(base_id(r.slurm_job_id)).second)
        ids.push_back(base_id(r.slurm_job_id));
    for (const auto& s : submitted)
      if (s.kind == "collect") st.collect_ids.push_back(s.id);
    st.slurm_queried = !ids.empty() && cli;
    if (!st.slurm_queried) return;
    if (!st.collect_ids.empty()) ids.push_back(st.collect_ids.back());
    const std::map<std::string, SlurmTask> tasks = cli->query(ids, &st.slurm_answered);
    if (!st.collect_ids.empty()) {
      auto it = tasks.find(st.collect_ids.back());
      st.collect_state = it == tasks.end() ? "unknown to Slurm" : it->second.state;
      if (it != tasks.end() && !it->second.reason.empty()) st.collect_state += " (" + it->second.reason + ")";
    }
    // The task's state is each of its jobs' only where it runs one; the body's trace says which
    // job of a chain runs, which wait and how the ended ones ended. First each job's task and
    // trace (which job started matters only in a running task: elsewhere only the ended file is
    // read), then each job's outcome, which needs to know whether any job of its task started.
    std::vector<std::optional<TaskView>> views(st.jobs.size());
    std::vector<TaskJobTrace> traces(st.jobs.size());
    std::set<std::string> started_tasks;
    for (std::size_t i = 0; i < st.jobs.size(); ++i) {
      auto& row = st.jobs[i];
      const auto it = row.slurm_id.empty() ? tasks.end() : tasks.find(row.slurm_id);
      if (it == tasks.end()) {
        // Slurm forgot the job (older than MinJobAge, no accounting): the disk must tell.
        if (!row.slurm_id.empty() && st.slurm_answered && run::is_queued(row.state))
          row.state = JobOutcome::Interrupted;
        continue;
      }
      const SlurmTask& t = it->second;
      row.slurm_state = t.state;
      row.elapsed = t.elapsed;
      row.node = t.node;
      row.restarts = t.restarts;
      row.exit_code = t.exit_code;
      views[i] = TaskView{map_slurm_state(t.state, t.exit_code), t.restarts, false};
      const bool running = views[i]->outcome == JobOutcome::Running;
      traces[i] = read_task_job_trace(rd, row.id, running ? row.slurm_id : "");
      if (traces[i].started) started_tasks.insert(row.slurm_id);
    }
    for (std::size_t i = 0; i < st.jobs.size(); ++i) {
      if (!views[i]) continue;
      auto& row = st.jobs[i];
      views[i]->any_started = started_tasks.count(row.slurm_id) > 0;
      row.state = job_outcome_in_task(*views[i], traces[i]);
      if (traces[i].ended_code && !run::is_queued(row.state)) row.exit_code = *traces[i].ended_code;
    }
  };
  return status::run_status(rd, overlay);
}

CancelResult cancel_run(const std::string& run_dir, const SlurmCli& cli, double wait_s, std::ostream& log) {
  run::RunDir rd(run_dir);
  if (!fs::is_directory(run_dir))
    throw std::invalid_argument("RUN_DIR: '" + run_dir + "' is not a directory");
  run::RunState state = rd.load_state();
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
  while (!(res.drained = cli.active(res.cancelled).empty()) && std::chrono::steady_clock::now() < deadline)
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  for (auto& [id, r] : state.jobs)
    if (run::is_queued(r.state)) r.state = run::JobOutcome::Interrupted;
  rd.save_state(state);
  if (!res.drained) log << "gridrun cancel: some jobs are still listed by squeue after " << wait_s << " s\n";
  return res;
}

}  // namespace gridrun::slurm
