// Rendering of sbatch scripts and job-list files; see script.hpp for the design.
//
// Everything here is string building from the options and jobs (no clock, no environment, no
// filesystem reads), so the output is byte-for-byte reproducible and golden-file tested.
#include "gridrun/slurm/script.hpp"

#include <cstdio>
#include <fstream>
#include <stdexcept>
#include <sys/stat.h>

#include "gridrun/jobs/params.hpp"
#include "gridrun/slurm/process.hpp"

namespace gridrun::slurm {
namespace {

constexpr std::size_t kHeaderJobs = 12;  // job ids listed in a script's comment header

std::string shape_tag(const Shape& s) {
  if (s.packed) return "gpu-packed";
  return s.device + "-r" + std::to_string(s.ranks) + "-t" + std::to_string(s.threads);
}

std::string describe(const Shape& s, const ScriptOptions& o) {
  std::string d;
  if (s.packed) {
    d = "gpu jobs packed into whole-node allocations (" + std::to_string(o.node_gpus) +
        " GPUs), one job step each";
  } else {
    d = s.device + ", " + std::to_string(s.ranks) + " rank(s) x " + std::to_string(s.threads) +
        " thread(s)";
    if (s.device == "gpu") d += ", 1 GPU per rank";
  }
  d += ", time limit " + (s.time_s > 0 ? format_time(s.time_s) : std::string("partition default"));
  return d;
}

// The warning must come before the limit but not at the start: a limit not longer than the requested
// warning time gets its warning at half the limit.
std::string signal_for(const std::string& signal, std::int64_t time_s) {
  const auto at = signal.find('@');
  if (at == std::string::npos || time_s <= 0) return signal;
  const std::int64_t want = std::stoll(signal.substr(at + 1));
  if (want < time_s) return signal;
  return signal.substr(0, at + 1) + std::to_string(time_s / 2);
}

// The flags that shaped these scripts, for the header's resubmit command.
std::string resubmit_flags(const ScriptOptions& o) {
  std::string f = o.pack_nodes ? " --pack-nodes" : "";
  auto add = [&](const char* flag, const std::string& v) {
    if (!v.empty()) f += std::string(" ") + flag + " " + shell_quote(v);
  };
  add("--partition", o.partition);
  add("--account", o.account);
  add("--qos", o.qos);
  add("--constraint", o.constraint);
  add("--time", o.default_time);
  if (o.launcher != "srun") add("--launcher", o.launcher);
  if (o.throttle > 0) add("--throttle", std::to_string(o.throttle));
  if (o.signal != ScriptOptions{}.signal) add("--signal", o.signal);
  for (const auto& a : o.sbatch_args) f += " --sbatch-arg=" + shell_quote(a);
  if (!o.template_text.empty()) f += "\n#   (add --template with the file used for this submission)";
  return f;
}

void sbatch_line(std::string& out, const std::string& arg) {
  out += "#SBATCH ";
  out += arg;
  out += '\n';
}

// The part after the #SBATCH block: identical for plain and packed arrays. Kept in one place so
// the behaviour on signals, restarts and exit codes is the same for both.
const char* kBody = R"BODY(
# ---- task body (generated; same for every task of this array) ----
set -uo pipefail
LINE=$(sed -n "$((SLURM_ARRAY_TASK_ID + 1))p" "$LIST")
if [[ -z "$LINE" ]]; then
  echo "gridrun: no line $((SLURM_ARRAY_TASK_ID + 1)) in $LIST" >&2
  exit 2
fi
RESTART=${SLURM_RESTART_COUNT:-0}
# ended/<job> holds the exit code of a job that ended for good (not interrupted): a restart of
# the task (after requeue) skips it and resumes only the interrupted ones.
ENDED="$RUN_DIR/slurm/ended"
mkdir -p "$ENDED"
ALLOC_CVD=${CUDA_VISIBLE_DEVICES:-}
read -r -a ALLOC_GPUS <<<"${ALLOC_CVD//,/ }"
MPI_ROOT=()
if [[ $(id -u) -eq 0 ]]; then MPI_ROOT=(--allow-run-as-root); fi
PIDS=()
JOBS=()
# USR1 (Slurm's warning before the time limit) and TERM go to every runner: they checkpoint and
# exit 75. The trap only runs because the runners are in the background and this shell waits.
FORWARDED=0
forward() {
  FORWARDED=1
  echo "gridrun: $(date -Is) got SIG$1, forwarding to ${#PIDS[@]} runner(s)"
  local p
  for p in "${PIDS[@]}"; do kill -s "$1" "$p" 2>/dev/null; done
}
trap 'forward USR1' USR1
trap 'forward TERM' TERM

for STEP in $LINE; do
  IFS=: read -r JOB R T GPUS CORES <<<"$STEP"
  R=${R:-$RANKS}
  T=${T:-$THREADS}
  if [[ $RESTART -gt 0 && -f "$ENDED/$JOB" ]]; then
    echo "gridrun: job $JOB ended (exit $(cat "$ENDED/$JOB")) before this restart, skipped"
    continue
  fi
  rm -f "$ENDED/$JOB"
  RESUME=()
  if [[ $RESTART -gt 0 ]] || compgen -G "$RUN_DIR/checkpoints/$JOB/*" >/dev/null; then
    RESUME=(--resume)
  fi
  ENVS=(OMP_NUM_THREADS=$T)
  GRES=()
  if [[ -n "${GPUS:-}" ]]; then
    if [[ "$LAUNCHER" == srun ]]; then
      # A packed step asks Slurm for its own GPUs (without --gres a step would claim all of the
      # job's GPUs and the next step would wait); Slurm sets its CUDA_VISIBLE_DEVICES.
      GRES=(--gres=gpu:$R)
    else
      # mpirun steps share the allocation: the placement's indices -> this allocation's devices.
      CVD=""
      for G in ${GPUS//,/ }; do CVD+="${CVD:+,}${ALLOC_GPUS[$G]:-$G}"; done
      ENVS+=(CUDA_VISIBLE_DEVICES=$CVD)
    fi
  fi
  echo "gridrun: $(date -Is) task ${SLURM_ARRAY_JOB_ID}_${SLURM_ARRAY_TASK_ID} restart $RESTART:" \
       "job $JOB ($R x $T${GPUS:+, gpus $GPUS}${CORES:+, cores $CORES}) ${RESUME[*]}"
  case "$LAUNCHER" in
    srun) CMD=(srun --mpi=pmix "${STEP_FLAGS[@]}" "${GRES[@]}" --nodes=1 --ntasks="$R" --cpus-per-task="$T") ;;
    mpirun) CMD=(mpirun "${MPI_ROOT[@]}" -np "$R" --bind-to none) ;;
  esac
  # `env` runs inside each rank, after Slurm has set the step's own CUDA_VISIBLE_DEVICES.
  "${CMD[@]}" env "${ENVS[@]}" "$TRAIN" --job "$RUN_DIR/jobs/$JOB.json" --out "$RUN_DIR/results" \
      "${RESUME[@]}" >>"$RUN_DIR/logs/$JOB.out" 2>>"$RUN_DIR/logs/$JOB.err" &
  PIDS+=($!)
  JOBS+=("$JOB")
done

RC=0
REQUEUE=0
for I in "${!PIDS[@]}"; do
  P=${PIDS[$I]}
  # A trapped signal interrupts `wait`; keep waiting until the runner has really exited.
  while kill -0 "$P" 2>/dev/null; do wait "$P"; done
  wait "$P"
  S=$?
  echo "gridrun: $(date -Is) job ${JOBS[$I]} exited with $S"
  # 75: checkpointed. Killed by the forwarded USR1/TERM (138/143) before the runner could catch it
  # (a warning during start-up): requeue too; it resumes from its latest checkpoint, if any.
  if [[ $S -eq 75 ]] || [[ $FORWARDED -eq 1 && ($S -eq 138 || $S -eq 143) ]]; then
    REQUEUE=1
  else
    echo "$S" >"$ENDED/${JOBS[$I]}"
    if [[ $S -ne 0 ]]; then RC=$S; fi
  fi
done
if [[ $REQUEUE -eq 1 ]]; then
  # Checkpointed: requeue this task; it restarts with SLURM_RESTART_COUNT > 0 and --resume.
  echo "gridrun: $(date -Is) requeueing $SLURM_JOB_ID"
  if scontrol requeue "$SLURM_JOB_ID"; then exit 0; fi
  exit 75
fi
exit $RC
)BODY";

void render_array(ArrayScript& a, const ScriptOptions& o, std::size_t n_jobs) {
  const std::size_t n = a.tasks.size();
  std::string& s = a.script;
  s.reserve(4096);
  s += "#!/bin/bash\n";
  s += "# gridrun run '" + o.run_name + "', array " + a.name + ": " + std::to_string(n_jobs) +
       " job(s) in " + std::to_string(n) + " task(s)\n";
  s += "# Shape: " + describe(a.shape, o) + "\n";
  s += "# Generated by `gridrun submit` (submission " + std::to_string(o.submission) + ") from\n#   " +
       o.grid_file + "\n";
  s += "# Task i runs line i+1 of " + a.list_path + ":\n#";
  std::size_t shown = 0;
  for (std::size_t t = 0; t < n && shown < kHeaderJobs; ++t) {
    for (const auto& id : a.tasks[t]) {
      if (shown == kHeaderJobs) break;
      s += " " + std::to_string(t) + ":" + id;
      ++shown;
      if (shown % 4 == 0 && shown < n_jobs && shown < kHeaderJobs) s += "\n#";
    }
  }
  if (n_jobs > shown) s += " ... (" + std::to_string(n_jobs - shown) + " more)";
  s += "\n";
  s += "# Resubmit what is missing (skips jobs that are completed, pending or running):\n";
  s += "#   gridrun submit " + shell_quote(o.grid_file) + " --slurm --out " + shell_quote(o.out_dir) +
       resubmit_flags(o) + "\n";
  s += "# Watch / stop: gridrun status " + shell_quote(o.run_dir) + "   gridrun cancel " +
       shell_quote(o.run_dir) + "\n";

  sbatch_line(s, "--job-name=gridrun-" + o.run_name + "-" + a.name);
  std::string range = "--array=0-" + std::to_string(n - 1);
  if (o.throttle > 0) range += "%" + std::to_string(o.throttle);
  sbatch_line(s, range);
  sbatch_line(s, "--nodes=1");
  if (a.shape.packed) {
    sbatch_line(s, "--exclusive");
    sbatch_line(s, "--gres=gpu:" + std::to_string(o.node_gpus));
  } else {
    sbatch_line(s, "--ntasks=" + std::to_string(a.shape.ranks));
    if (a.shape.device == "gpu") sbatch_line(s, "--gres=gpu:" + std::to_string(a.shape.ranks));
    sbatch_line(s, "--cpus-per-task=" + std::to_string(a.shape.threads));
  }
  if (a.shape.time_s > 0) sbatch_line(s, "--time=" + format_time(a.shape.time_s));
  if (!o.signal.empty()) sbatch_line(s, "--signal=" + signal_for(o.signal, a.shape.time_s));
  sbatch_line(s, "--requeue");
  sbatch_line(s, "--open-mode=append");
  sbatch_line(s, "--output=" + o.run_dir + "/logs/slurm-%A_%a.out");
  if (!o.partition.empty()) sbatch_line(s, "--partition=" + o.partition);
  if (!o.account.empty()) sbatch_line(s, "--account=" + o.account);
  if (!o.qos.empty()) sbatch_line(s, "--qos=" + o.qos);
  if (!o.constraint.empty()) sbatch_line(s, "--constraint=" + o.constraint);
  if (!o.template_text.empty()) {
    s += "# ---- from --template ----\n" + o.template_text;
    if (o.template_text.back() != '\n') s += '\n';
  }
  for (const auto& arg : o.sbatch_args) sbatch_line(s, arg);

  s += "\nRUN_DIR=" + shell_quote(o.run_dir) + "\n";
  s += "TRAIN=" + shell_quote(o.train_bin) + "\n";
  s += "LIST=\"$RUN_DIR/slurm/" + a.name + ".jobs\"\n";
  s += "LAUNCHER=" + o.launcher + "\n";
  if (a.shape.packed) {
    s += "RANKS=   # packed: ranks, threads, GPUs and cores of each step come from its list entry\n";
    s += "THREADS=\n";
  } else {
    s += "RANKS=" + std::to_string(a.shape.ranks) + "\n";
    s += "THREADS=" + std::to_string(a.shape.threads) + "\n";
  }
  // Packed steps share one allocation: --exact gives each only the cores it asks for.
  s += a.shape.packed ? "STEP_FLAGS=(--exact)\n" : "STEP_FLAGS=()\n";
  s += kBody;
}

std::string join_list(const std::string& dir, const std::string& name, const char* ext) {
  return dir + "/slurm/" + name + ext;
}

void check_options(const ScriptOptions& o) {
  if (o.max_array < 1) throw std::invalid_argument("--max-array: must be >= 1");
  if (o.launcher != "srun" && o.launcher != "mpirun")
    throw std::invalid_argument("--launcher: '" + o.launcher + "' is not one of srun, mpirun");
  if (o.node_gpus < 1) throw std::invalid_argument("--node-gpus: must be >= 1");
  if (o.run_dir.empty() || o.run_name.empty())
    throw std::invalid_argument("generate_scripts: run_dir and run_name are required");
}

}  // namespace

std::string format_time(std::int64_t sec) {
  char buf[48];
  const long long d = sec / 86400, h = (sec / 3600) % 24, m = (sec / 60) % 60, s = sec % 60;
  if (d > 0) std::snprintf(buf, sizeof buf, "%lld-%02lld:%02lld:%02lld", d, h, m, s);
  else std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", h, m, s);
  return buf;
}

Shape job_shape(const jobs::Job& job, const ScriptOptions& o) {
  Shape s;
  auto get_str = [&](const char* k, const std::string& def) {
    auto it = job.params.find(k);
    return it == job.params.end() ? def : std::get<std::string>(it->second);
  };
  auto get_int = [&](const char* k, std::int64_t def) {
    auto it = job.params.find(k);
    return it == job.params.end() ? def : std::get<std::int64_t>(it->second);
  };
  s.device = get_str("device", "cpu");
  s.ranks = get_int("ranks", 1);
  s.threads = get_int("threads_per_rank", 1);
  std::string tl = get_str("time_limit", "");
  if (tl.empty()) tl = o.default_time;
  s.time_s = jobs::time_limit_seconds(tl);
  return s;
}

ScriptSet generate_scripts(const std::vector<jobs::Job>& jobs, const std::vector<Bundle>& bundles,
                           const ScriptOptions& o) {
  check_options(o);
  ScriptSet set;
  // Shapes in order of first appearance; jobs of a shape in grid order.
  std::vector<Shape> shapes;
  std::vector<std::vector<const jobs::Job*>> members;
  for (const auto& j : jobs) {
    Shape sh = job_shape(j, o);
    std::size_t k = 0;
    while (k < shapes.size() && !(shapes[k] == sh)) ++k;
    if (k == shapes.size()) {
      shapes.push_back(sh);
      members.emplace_back();
    }
    members[k].push_back(&j);
  }
  std::size_t counter = 0;
  const std::string prefix = "s" + std::to_string(o.submission) + "-a";
  for (std::size_t k = 0; k < shapes.size(); ++k) {
    const auto& m = members[k];
    for (std::size_t start = 0; start < m.size(); start += o.max_array) {
      ArrayScript a;
      a.shape = shapes[k];
      a.name = prefix + std::to_string(counter++) + "-" + shape_tag(a.shape);
      a.script_path = join_list(o.run_dir, a.name, ".sbatch");
      a.list_path = join_list(o.run_dir, a.name, ".jobs");
      const std::size_t end = std::min(m.size(), start + o.max_array);
      a.tasks.reserve(end - start);
      for (std::size_t i = start; i < end; ++i) {
        a.tasks.push_back({m[i]->id});
        a.job_list += m[i]->id;
        a.job_list += '\n';
      }
      render_array(a, o, end - start);
      set.arrays.push_back(std::move(a));
    }
  }
  // Packed bundles: one array per time limit (a bundle's limit is its longest step's).
  std::vector<std::int64_t> limits;
  std::vector<std::vector<const Bundle*>> by_limit;
  for (const auto& b : bundles) {
    if (b.empty()) continue;
    std::int64_t t = 0;
    for (const auto& st : b) t = std::max(t, st.time_s);
    std::size_t k = 0;
    while (k < limits.size() && limits[k] != t) ++k;
    if (k == limits.size()) {
      limits.push_back(t);
      by_limit.emplace_back();
    }
    by_limit[k].push_back(&b);
  }
  for (std::size_t k = 0; k < limits.size(); ++k) {
    const auto& m = by_limit[k];
    for (std::size_t start = 0; start < m.size(); start += o.max_array) {
      ArrayScript a;
      a.shape.device = "gpu";
      a.shape.packed = true;
      a.shape.ranks = 0;
      a.shape.threads = 0;
      a.shape.time_s = limits[k];
      a.name = prefix + std::to_string(counter++) + "-" + shape_tag(a.shape);
      a.script_path = join_list(o.run_dir, a.name, ".sbatch");
      a.list_path = join_list(o.run_dir, a.name, ".jobs");
      const std::size_t end = std::min(m.size(), start + o.max_array);
      std::size_t n_jobs = 0;
      for (std::size_t i = start; i < end; ++i) {
        std::vector<std::string> ids;
        std::string line;
        for (const auto& st : *m[i]) {
          ids.push_back(st.job_id);
          if (!line.empty()) line += ' ';
          line += st.job_id + ":" + std::to_string(st.ranks) + ":" + std::to_string(st.threads) +
                  ":" + st.gpus + ":" + st.cores;
        }
        n_jobs += ids.size();
        a.tasks.push_back(std::move(ids));
        a.job_list += line + "\n";
      }
      render_array(a, o, n_jobs);
      set.arrays.push_back(std::move(a));
    }
  }

  // The collect job: after every array task has ended in any state (afterany: afterok on an array
  // with one failed task would never be released).
  set.collect_path = o.run_dir + "/slurm/s" + std::to_string(o.submission) + "-collect.sbatch";
  std::string& c = set.collect_script;
  c += "#!/bin/bash\n";
  c += "# gridrun run '" + o.run_name + "': builds results.h5 once all arrays of submission " +
       std::to_string(o.submission) + " have ended.\n";
  c += "# Submitted as: sbatch --dependency=afterany:<array ids> " + set.collect_path + "\n";
  c += "# By hand at any time: " + shell_quote(o.gridrun_bin) + " collect " + shell_quote(o.run_dir) + "\n";
  sbatch_line(c, "--job-name=gridrun-" + o.run_name + "-collect");
  sbatch_line(c, "--nodes=1");
  sbatch_line(c, "--ntasks=1");
  sbatch_line(c, "--cpus-per-task=1");
  sbatch_line(c, "--time=0:30:00");
  sbatch_line(c, "--kill-on-invalid-dep=no");
  sbatch_line(c, "--open-mode=append");
  sbatch_line(c, "--output=" + o.run_dir + "/logs/collect-%j.out");
  if (!o.partition.empty()) sbatch_line(c, "--partition=" + o.partition);
  if (!o.account.empty()) sbatch_line(c, "--account=" + o.account);
  if (!o.qos.empty()) sbatch_line(c, "--qos=" + o.qos);
  c += "\nexec " + shell_quote(o.gridrun_bin) + " collect " + shell_quote(o.run_dir) + "\n";
  return set;
}

namespace {
void write_atomic(const std::string& path, const std::string& text, bool executable) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f) throw std::runtime_error("cannot write " + tmp);
    f << text;
    f.flush();
    if (!f) throw std::runtime_error("write failed: " + tmp);
  }
  if (executable) ::chmod(tmp.c_str(), 0755);
  if (std::rename(tmp.c_str(), path.c_str()) != 0) throw std::runtime_error("cannot rename " + tmp);
}
}  // namespace

void write_script_set(const ScriptSet& set) {
  for (const auto& a : set.arrays) {
    write_atomic(a.list_path, a.job_list, false);
    write_atomic(a.script_path, a.script, true);
  }
  write_atomic(set.collect_path, set.collect_script, true);
}

}  // namespace gridrun::slurm
