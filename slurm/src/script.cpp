// Rendering of sbatch scripts and job-list files; see script.hpp for the design.
//
// Everything here is string building from the options and jobs (no clock, no environment, no
// filesystem reads), so the output is byte-for-byte reproducible and golden-file tested.
#include "gridrun/slurm/script.hpp"

#include <sys/stat.h>

#include <cctype>
#include <cstdio>
#include <stdexcept>
#include <string_view>
#include <utility>

#include "gridrun/base/fs.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/jobs/params.hpp"
#include "gridrun/run/run_dir.hpp"
#include "gridrun/slurm/slurm_cli.hpp"
#include "task_body.hpp"

namespace gridrun::slurm {
namespace {

using base::shell_quote;

constexpr std::size_t kHeaderJobs = 12;  // job ids listed in a script's comment header
// A generic resource request of Slurm's (--gres=gpu:N per node), not a device's name.
const std::string kGresGpu = "--gres=gpu:";

std::string shape_tag(const Shape& s) {
  if (s.packed) return "gpu-packed";
  return to_string(s.fp.device) + "-r" + std::to_string(s.fp.ranks) + "-t" +
         std::to_string(s.fp.threads_per_rank) + (s.fp.nodes > 1 ? "-n" + std::to_string(s.fp.nodes) : "");
}

// Whether a task's chain runs in a warm worker: --launch warm, on one node (the worker's pipes are
// files of this host). The task body makes the same test (the nodes `gridrun job-shape` reads).
bool warm_chains(const Shape& s, const ScriptOptions& o) {
  return o.launch == run::Launch::Warm && s.fp.nodes <= 1;
}

std::string describe(const Shape& s, const ScriptOptions& o) {
  std::string d;
  if (s.packed) {
    d = "gpu jobs packed into whole-node allocations (" + std::to_string(o.node_gpus) +
        " GPUs), one job step each";
  } else {
    d = to_string(s.fp.device) + ", " + std::to_string(s.fp.ranks) + " rank(s) x " +
        std::to_string(s.fp.threads_per_rank) + " thread(s)";
    if (s.fp.gpus > 0) d += ", 1 GPU per rank";
    if (s.fp.nodes > 1)
      d += ", over " + std::to_string(s.fp.nodes) + " nodes (" + std::to_string(s.fp.per_node.ranks) +
           " each)";
  }
  if (o.jobs_per_task > 1)
    d += ", up to " + std::to_string(o.jobs_per_task) + " jobs one after another per task" +
         (warm_chains(s, o) ? " in one warm worker" : "");
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
  auto add = [&](const std::string& flag, const std::string& v) {
    if (!v.empty()) f += " " + flag + " " + shell_quote(v);
  };
  for (const auto& so : site_options()) add(std::string("--") + so.flag, o.*so.field);
  if (o.launcher != "srun") add("--launcher", o.launcher);
  if (o.throttle > 0) add("--throttle", std::to_string(o.throttle));
  if (o.launch != ScriptOptions{}.launch) add("--launch", run::to_string(o.launch));
  if (o.jobs_per_task != ScriptOptions{}.jobs_per_task)
    add("--jobs-per-task", std::to_string(o.jobs_per_task));
  if (o.signal != ScriptOptions{}.signal) add("--signal", o.signal);
  for (const auto& a : o.sbatch_args) f += " --sbatch-arg=" + shell_quote(a);
  for (const auto& a : o.set_args) add("--set", a);
  for (const auto& a : o.only_args) add("--only", a);
  if (!o.template_text.empty()) f += "\n#   (add --template with the file used for this submission)";
  return f;
}

// A value on a #SBATCH line as sbatch reads it (not the shell): it ends at white space or '#'
// unless in double quotes, where a backslash escapes the next character. Plain paths stay as they
// are, so the common script reads as before.
std::string sbatch_quote(const std::string& v) {
  bool plain = !v.empty();
  for (char c : v)
    if (std::isspace(static_cast<unsigned char>(c)) || c == '#' || c == '"' || c == '\'' || c == '\\')
      plain = false;
  if (plain) return v;
  std::string q = "\"";
  for (char c : v) {
    if (c == '"' || c == '\\') q += '\\';
    q += c;
  }
  return q + "\"";
}

void sbatch_line(std::string& out, const std::string& arg) {
  out += "#SBATCH ";
  out += arg;
  out += '\n';
}

// A --template line that is a command (not blank, not a comment or #SBATCH directive): sbatch
// reads no directive after the first one.
bool is_template_command(const std::string& line) {
  const std::string t = base::trim(line);
  return !t.empty() && t[0] != '#';
}

// --template text cut before its first command line: {directives and comments, the rest}, each
// ending in a newline when not empty.
std::pair<std::string, std::string> split_template(const std::string& text) {
  std::pair<std::string, std::string> out;
  bool command_seen = false;
  for (const auto& line : base::split(text, '\n')) {
    if (is_template_command(line)) command_seen = true;
    (command_seen ? out.second : out.first) += line + "\n";
  }
  // split() gives a last empty field for text that ends in a newline: drop its extra newline.
  auto& last = out.second.empty() ? out.first : out.second;
  if (!text.empty() && text.back() == '\n' && !last.empty()) last.pop_back();
  if (base::trim(out.first).empty()) out.first.clear();
  return out;
}

// The part after the #SBATCH block and the variables (slurm/src/task_body.sh, after its marker
// line): identical for plain and packed arrays, so the behaviour on signals, restarts and exit
// codes is the same for both.
std::string_view task_body() {
  constexpr std::string_view kMarker = "# ---- 8< ----\n";
  const std::string_view file = detail::kTaskBodyFile;
  const auto at = file.find(kMarker);
  return at == std::string_view::npos ? file : file.substr(at + kMarker.size());
}

// A path on a #SBATCH --output line: Slurm expands %j, %A, %a ... in it (a filename pattern), so a
// literal '%' of the run directory is doubled; `pattern` (the file name, "slurm-%A_%a.out") is
// appended as it is. Then quoted for sbatch's own reading of the line.
std::string sbatch_output(const std::string& run_dir, const std::string& pattern) {
  std::string escaped;
  for (char c : run_dir) escaped += c == '%' ? std::string("%%") : std::string(1, c);
  return sbatch_quote(run::RunDir(escaped).log_file(pattern));
}

// A per-job path of the run directory split around the job id, as a bash array ('PREFIX' 'SUFFIX')
// the task body joins as ${VAR[0]}$JOB${VAR[1]}. Why not a printf template: a format built from a
// path interprets its backslashes and percent signs (issue 45: o\tb became a TAB, so every task had
// a wrong job path); array expansion interprets nothing. Every path still comes from run::RunDir.
template <class PathOf>
std::string around_job_id(const run::RunDir& rd, PathOf path_of) {
  // A marker no path can hold (check_script_options refuses control characters in the run
  // directory), found from the end: the id is in the last component.
  const std::string marker = "\x01JOB\x01";
  const std::string full = (rd.*path_of)(marker);
  const auto at = full.rfind(marker);
  return "(" + shell_quote(full.substr(0, at)) + " " + shell_quote(full.substr(at + marker.size())) + ")";
}

// Run-directory paths for the script's variables: every path comes from run::RunDir.
struct ScriptPaths {
  std::string results, ended, workers, job_file, log_out, log_err, checkpoints, logs, others;
};

ScriptPaths script_paths(const std::string& run_dir) {
  const run::RunDir rd(run_dir);
  return {shell_quote(rd.results_dir()),
          shell_quote(rd.slurm_ended_dir()),
          shell_quote(rd.workers_dir()),
          around_job_id(rd, &run::RunDir::job_file),
          around_job_id(rd, &run::RunDir::log_out),
          around_job_id(rd, &run::RunDir::log_err),
          around_job_id(rd, &run::RunDir::checkpoint_dir),
          shell_quote(rd.logs_dir()),
          around_job_id(rd, &run::RunDir::others_file)};
}

// Partition, account and QoS: the site's choice for every script (arrays and the collect job).
// Constraint too in the array scripts (`line`: which rows of site_options()).
void site_lines(std::string& s, const ScriptOptions& o, SiteLine line) {
  for (const auto& so : site_options())
    if (so.line == line && !(o.*so.field).empty())
      sbatch_line(s, "--" + std::string(so.flag) + "=" + o.*so.field);
}

// The comment header: what the array runs and how to resubmit, watch or stop it.
void render_header(std::string& s, const ArrayScript& a, const ScriptOptions& o, std::size_t n_jobs) {
  const std::size_t n = a.tasks.size();
  s += "#!/bin/bash\n";
  s += "# gridrun run '" + o.run_name + "', array " + a.name + ": " + std::to_string(n_jobs) + " job(s) in " +
       std::to_string(n) + " task(s)\n";
  s += "# Shape: " + describe(a.shape, o) + "\n";
  s += "# Generated by `gridrun submit` (submission " + std::to_string(o.submission) + ") from\n#   " +
       shell_quote(o.grid_file) + "\n";
  s += "# Task i runs line i+1 of " + shell_quote(a.list_path) + ":\n#";
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
}

// The variables the task body reads (task_body.sh names them).
void render_variables(std::string& s, const ArrayScript& a, const ScriptOptions& o) {
  const ScriptPaths p = script_paths(o.run_dir);
  s += "\nTRAIN=" + shell_quote(o.train_bin) + "\n";
  s += "GRIDRUN=" + shell_quote(o.gridrun_bin) + "\n";  // `gridrun worker-msg` (warm launches)
  s += "LIST=" + shell_quote(a.list_path) + "\n";
  s += "LAUNCHER=" + o.launcher + "\n";
  s += "LAUNCH=" + run::to_string(o.launch) + "\n";
  // Packed steps share one allocation: --exact gives each only the cores it asks for.
  s += a.shape.packed ? "STEP_FLAGS=(--exact)\n" : "STEP_FLAGS=()\n";
  if (!o.network.empty()) {
    // --network: the interfaces between hosts, for every rank this script starts (exported, so
    // srun and mpirun pass them on). NCCL_SOCKET_IFNAME takes names, not subnets.
    s += "export OMPI_MCA_btl_tcp_if_include=" + shell_quote(o.network) + "\n";
    s += "export OMPI_MCA_oob_tcp_if_include=" + shell_quote(o.network) + "\n";
    std::string names;
    for (const auto& item : base::split(o.network, ','))
      if (item.find('/') == std::string::npos) names += (names.empty() ? "" : ",") + item;
    if (!names.empty()) s += "export NCCL_SOCKET_IFNAME=" + shell_quote(names) + "\n";
    // gloo (torch.distributed on CPUs: a command job's program) reads its own variable.
    if (!names.empty()) s += "export GLOO_SOCKET_IFNAME=" + shell_quote(names) + "\n";
  }
  s += "# The run directory (per job: the path before and after the job id)\n";
  s += "RESULTS_DIR=" + p.results + "\n";
  s += "ENDED_DIR=" + p.ended + "\n";
  s += "WORKERS_DIR=" + p.workers + "\n";
  s += "EXIT_INTERRUPTED=" + std::to_string(run::kExitInterrupted) + "\n";
  s += "JOB_FILE=" + p.job_file + "\n";
  s += "JOB_LOG_OUT=" + p.log_out + "\n";
  s += "JOB_LOG_ERR=" + p.log_err + "\n";
  s += "JOB_CHECKPOINTS=" + p.checkpoints + "\n";
  // The other Slurm jobs on the task's nodes (the report's conditions of a phase): this run's own
  // arrays and collect job are those named gridrun-<run>-*.
  s += "JOB_OTHERS=" + p.others + "\n";
  s += "RUN_JOB_PREFIX=" + shell_quote("gridrun-" + o.run_name + "-") + "\n";
}

void render_array(ArrayScript& a, const ScriptOptions& o, std::size_t n_jobs) {
  std::string& s = a.script;
  s.reserve(4096);
  render_header(s, a, o, n_jobs);
  sbatch_line(s, "--job-name=gridrun-" + o.run_name + "-" + a.name);
  std::string range = "--array=0-" + std::to_string(a.tasks.size() - 1);
  if (o.throttle > 0) range += "%" + std::to_string(o.throttle);
  sbatch_line(s, range);
  sbatch_line(s, "--nodes=" + std::to_string(a.shape.fp.nodes));
  if (a.shape.packed) {
    sbatch_line(s, "--exclusive");
    sbatch_line(s, kGresGpu + std::to_string(o.node_gpus));
  } else {
    // --ntasks-per-node and --gres are per node: the footprint's share of each host.
    const jobs::Footprint& fp = a.shape.fp;
    sbatch_line(s, "--ntasks=" + std::to_string(fp.ranks));
    if (fp.nodes > 1) sbatch_line(s, "--ntasks-per-node=" + std::to_string(fp.per_node.ranks));
    if (fp.per_node.gpus > 0) sbatch_line(s, kGresGpu + std::to_string(fp.per_node.gpus));
    sbatch_line(s, "--cpus-per-task=" + std::to_string(fp.threads_per_rank));
  }
  if (a.shape.time_s > 0) sbatch_line(s, "--time=" + format_time(a.shape.time_s));
  if (!o.signal.empty()) sbatch_line(s, "--signal=" + signal_for(o.signal, a.shape.time_s));
  sbatch_line(s, "--requeue");
  sbatch_line(s, "--open-mode=append");
  sbatch_line(s, "--output=" + sbatch_output(o.run_dir, "slurm-%A_%a.out"));
  site_lines(s, o, SiteLine::every_script);
  site_lines(s, o, SiteLine::arrays);
  // The template's directives join the header; its commands wait until every #SBATCH line is out
  // (sbatch reads none after the first command; check_script_options put them in that order).
  const auto [directives, commands] = split_template(o.template_text);
  if (!directives.empty()) s += "# ---- from --template ----\n" + directives;
  for (const auto& arg : o.sbatch_args) sbatch_line(s, arg);
  if (!commands.empty()) s += "# ---- from --template (commands) ----\n" + commands;
  render_variables(s, a, o);
  s += '\n';
  s += task_body();
}

// A new array of this submission: name s<N>-a<K>-<shape>, files under the run's slurm/ folder.
ArrayScript new_array(const Shape& shape, const ScriptOptions& o, std::size_t& counter) {
  ArrayScript a;
  a.shape = shape;
  a.name = "s" + std::to_string(o.submission) + "-a" + std::to_string(counter++) + "-" + shape_tag(shape);
  const run::RunDir rd(o.run_dir);
  a.script_path = rd.slurm_file(a.name + ".sbatch");
  a.list_path = rd.slurm_file(a.name + ".jobs");
  return a;
}

// Where the first control character of `v` is (npos: none). A newline in a flag would end the
// #SBATCH or comment line it is written on and make the rest shell code; the other control
// characters have no business in a name or path either and would reach the terminal raw.
std::size_t control_at(std::string_view v) {
  for (std::size_t i = 0; i < v.size(); ++i) {
    const auto c = static_cast<unsigned char>(v[i]);
    if (c < 0x20 || c == 0x7f) return i;
  }
  return std::string_view::npos;
}

std::string char_name(char c) {
  if (c == '\n') return "a newline";
  if (c == '\r') return "a carriage return";
  if (c == '\t') return "a tab";
  char buf[16];
  std::snprintf(buf, sizeof buf, "byte 0x%02x", static_cast<unsigned>(static_cast<unsigned char>(c)));
  return std::string("a control character (") + buf + ")";
}

void no_control(const char* flag, std::string_view v) {
  const auto at = control_at(v);
  if (at != std::string_view::npos)
    throw std::invalid_argument(std::string(flag) + ": contains " + char_name(v[at]) + " at character " +
                                std::to_string(at + 1) +
                                "; a flag's value must be one line of printable text");
}

// Slurm's own character sets. Partition, account and QoS names are identifiers (letters, digits,
// '_', '-', '.'; --partition also takes a comma-separated list); a constraint is features joined
// with & | , and grouped with [ ] ( ), with *N counts (sbatch(1) --constraint). Anything else
// (spaces, quotes, ';', '#', '$') is not a name Slurm could have, and '#' or a space would also
// end the value of a #SBATCH line.
void slurm_name(const char* flag, const std::string& v, std::string_view extra, const char* what) {
  no_control(flag, v);
  for (char c : v) {
    const bool ok = std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' || c == '.' ||
                    extra.find(c) != std::string_view::npos;
    if (!ok)
      throw std::invalid_argument(std::string(flag) + ": '" + v + "' is not " + what + " (character '" +
                                  std::string(1, c) + "' is not allowed)");
  }
}

// --template holds site lines: #SBATCH directives and comments first, then shell commands
// (module load ...). sbatch stops reading directives at the first command, so a #SBATCH line after
// one would be silently ignored: that is an error here, with the file's line number.
void check_template(const ScriptOptions& o) {
  const std::string where =
      o.template_path.empty() ? std::string("--template") : "--template " + o.template_path;
  bool command_seen = false;
  std::size_t line_no = 0;
  for (const auto& line : base::split(o.template_text, '\n')) {
    ++line_no;
    for (std::size_t i = 0; i < line.size(); ++i) {
      const auto c = static_cast<unsigned char>(line[i]);
      if ((c < 0x20 && c != '\t') || c == 0x7f)
        throw std::invalid_argument(where + ":" + std::to_string(line_no) + ": contains " +
                                    char_name(line[i]) + "; a template is plain text lines");
    }
    if (is_template_command(line)) {
      command_seen = true;
      continue;
    }
    const std::string t = base::trim(line);
    if (base::starts_with(t, "#SBATCH")) {
      if (command_seen)
        throw std::invalid_argument(where + ":" + std::to_string(line_no) +
                                    ": #SBATCH after a command; sbatch ignores directives after the "
                                    "first command, so move it above");
      if (t.find("--array") != std::string::npos || base::starts_with(base::trim(t.substr(7)), "-a"))
        throw std::invalid_argument(where + ":" + std::to_string(line_no) +
                                    ": --array is gridrun's (one task per job); remove it");
    }
  }
}

}  // namespace

const std::vector<SiteOption>& site_options() {
  // Interface names (eth0, ib0.8001, enp1s0f0) and subnets (10.1.0.0/16), comma separated, for
  // network; --partition also takes a comma-separated list.
  static const std::vector<SiteOption> kRows{
      {"partition", "", &ScriptOptions::partition, ",", "a Slurm partition name or comma-separated list",
       "sbatch --partition (not -p: that is --policy)", SiteLine::every_script},
      {"account", "A", &ScriptOptions::account, "", "a Slurm account name", "sbatch --account",
       SiteLine::every_script},
      {"qos", "", &ScriptOptions::qos, "", "a Slurm QoS name", "sbatch --qos", SiteLine::every_script},
      {"constraint", "C", &ScriptOptions::constraint, "&|,*[]():=+",
       "a Slurm constraint (features, & | , [ ] ( ) *N)", "sbatch --constraint", SiteLine::arrays},
      {"time", "t", &ScriptOptions::default_time, ":", "a Slurm time limit",
       "time limit for jobs whose grid sets no time_limit (MM, HH:MM:SS, D-HH:MM:SS)", SiteLine::apart},
      {"network", "", &ScriptOptions::network,
       ",/:", "a list of network interfaces or subnets (eth0,ib0 or 10.1.0.0/16)",
       "interfaces (eth0,ib0) or subnets (10.1.0.0/16) the ranks of a multi-host job talk over: "
       "exported as Open MPI's btl/oob_tcp_if_include and NCCL_SOCKET_IFNAME (names only)",
       SiteLine::apart},
  };
  return kRows;
}

void check_script_options(const ScriptOptions& o) {
  if (o.max_array < 1 || o.max_array > kMaxArrayTasks)
    throw std::invalid_argument("--max-array: must be 1.." + std::to_string(kMaxArrayTasks));
  if (o.launcher != "srun" && o.launcher != "mpirun")
    throw std::invalid_argument("--launcher: '" + o.launcher + "' is not one of srun, mpirun");
  if (o.node_gpus < 1) throw std::invalid_argument("--node-gpus: must be >= 1");
  if (o.jobs_per_task < 1 || o.jobs_per_task > kMaxArrayTasks)
    throw std::invalid_argument("--jobs-per-task: must be 1.." + std::to_string(kMaxArrayTasks));
  if (!o.default_time.empty()) {
    try {
      jobs::time_limit_seconds(o.default_time);
    } catch (const std::exception& e) {
      throw std::invalid_argument("--time: '" + o.default_time + "' is not a Slurm time limit (" + e.what() +
                                  ")");
    }
  }
  for (const auto& so : site_options())
    slurm_name(("--" + std::string(so.flag)).c_str(), o.*so.field, so.allowed, so.what);
  no_control("--signal", o.signal);
  no_control("--train-bin", o.train_bin);
  no_control("--gridrun-bin", o.gridrun_bin);
  no_control("--out", o.out_dir);
  no_control("GRID (the grid file's path)", o.grid_file);
  no_control("the run directory", o.run_dir);
  // A warm worker's task messages are JSON lines naming the job's files in the run directory.
  // Checked on --out (made absolute: the working directory is part of every path) right after
  // parsing, before anything is written, and again on the run directory.
  if (o.launch == run::Launch::Warm)
    for (const std::string& dir : {base::absolute_path(o.out_dir), o.run_dir})
      if (!base::is_utf8(dir))
        throw std::invalid_argument("--launch warm: the run directory " + base::printable_line(dir) +
                                    " is not valid UTF-8, and a warm worker's task messages (JSON) "
                                    "name files in it; use --launch cold or an --out whose path is UTF-8");
  // Slurm strips every backslash from an --output path and then expands no pattern in it
  // (sbatch(1), filename pattern "\\"), so no #SBATCH line can name such a directory: its logs
  // would go to another path, or the task would fail to open them.
  if (const auto at = o.run_dir.find('\\'); at != std::string::npos)
    throw std::invalid_argument("the run directory " + o.run_dir + " contains a backslash (character " +
                                std::to_string(at + 1) +
                                "), which Slurm removes from --output paths; choose --out without one");
  no_control("the grid's name", o.run_name);
  for (const auto& a : o.sbatch_args) {
    no_control("--sbatch-arg", a);
    if (a.empty() || a[0] != '-')
      throw std::invalid_argument("--sbatch-arg: '" + a + "' is not an sbatch option (starts with -)");
    if (a.rfind("--array", 0) == 0 || a.rfind("-a", 0) == 0)
      throw std::invalid_argument("--sbatch-arg: '" + a + "': --array is gridrun's (one task per job)");
  }
  // --set and --only values land in the header's resubmit comment: a newline would end the
  // comment and run the rest as shell code.
  for (const auto& a : o.set_args) no_control("--set", a);
  for (const auto& a : o.only_args) no_control("--only", a);
  check_template(o);
}

std::string format_time(std::int64_t sec) {
  char buf[48];
  const long long d = sec / 86400, h = (sec / 3600) % 24, m = (sec / 60) % 60, s = sec % 60;
  if (d > 0)
    std::snprintf(buf, sizeof buf, "%lld-%02lld:%02lld:%02lld", d, h, m, s);
  else
    std::snprintf(buf, sizeof buf, "%lld:%02lld:%02lld", h, m, s);
  return buf;
}

Shape job_shape(const jobs::Job& job, const ScriptOptions& o) {
  Shape s;
  s.fp = jobs::footprint(job.params);
  if (auto it = job.meta.find("phase"); it != job.meta.end()) s.phase = it->second;
  std::string tl = job.params.time_limit;
  if (tl.empty()) tl = o.default_time;
  s.time_s = jobs::time_limit_seconds(tl);
  return s;
}

namespace {

// Items grouped by a key: groups in order of first appearance, items in input order. Arrays are
// cut from the groups in chunks of at most max_array tasks.
template <class Key, class Item>
class Groups {
 public:
  void add(const Key& key, const Item& item) {
    std::size_t k = 0;
    while (k < keys_.size() && !(keys_[k] == key)) ++k;
    if (k == keys_.size()) {
      keys_.push_back(key);
      members_.emplace_back();
    }
    members_[k].push_back(&item);
  }
  template <class Fn>
  void for_each_chunk(std::size_t max, Fn fn) const {
    for (std::size_t k = 0; k < keys_.size(); ++k) {
      const auto& m = members_[k];
      for (std::size_t start = 0; start < m.size(); start += max)
        fn(keys_[k], std::vector<const Item*>(
                         m.begin() + static_cast<std::ptrdiff_t>(start),
                         m.begin() + static_cast<std::ptrdiff_t>(std::min(m.size(), start + max))));
    }
  }

 private:
  std::vector<Key> keys_;
  std::vector<std::vector<const Item*>> members_;
};

// The time limit of a task that runs `n` jobs of limit `each` one after another (0: the partition's).
std::int64_t chain_time(std::int64_t each, std::size_t n) { return each * static_cast<std::int64_t>(n); }

// Plain arrays: one per shape (in order of first appearance), jobs in grid order, up to
// jobs_per_task of them per task (a line ID+ID+...), up to max_array tasks per array.
void shape_arrays(const std::vector<jobs::Job>& jobs, const ScriptOptions& o, std::size_t& counter,
                  ScriptSet& set) {
  Groups<Shape, jobs::Job> groups;
  for (const auto& j : jobs) groups.add(job_shape(j, o), j);
  const std::size_t per_task = o.jobs_per_task, per_array = o.max_array * per_task;
  groups.for_each_chunk(per_array, [&](const Shape& shape, const std::vector<const jobs::Job*>& chunk) {
    Shape task_shape = shape;
    task_shape.time_s = chain_time(shape.time_s, std::min(per_task, chunk.size()));
    ArrayScript a = new_array(task_shape, o, counter);
    a.tasks.reserve((chunk.size() + per_task - 1) / per_task);
    for (std::size_t i = 0; i < chunk.size(); ++i) {
      const bool first = i % per_task == 0;
      if (first) a.tasks.emplace_back();
      a.tasks.back().push_back(chunk[i]->id);
      if (!first) a.job_list += '+';
      a.job_list += chunk[i]->id;
      if ((i + 1) % per_task == 0 || i + 1 == chunk.size()) a.job_list += '\n';
    }
    render_array(a, o, chunk.size());
    set.arrays.push_back(std::move(a));
  });
}

// Whether two bundles have one layout (each step's ranks, threads, GPUs and cores) and time limit:
// bundles of one layout can follow one another in a task, step by step on the same devices.
bool same_layout(const Bundle& a, const Bundle& b) {
  if (a.size() != b.size() || a.front().time_s != b.front().time_s) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (a[i].ranks != b[i].ranks || a[i].threads != b[i].threads || a[i].gpus != b[i].gpus ||
        a[i].cores != b[i].cores)
      return false;
  return true;
}

// Up to jobs_per_task bundles of the same layout and time limit as one: each step a chain of
// their jobs (ID+ID+...), its time limit their sum. Bundles in order of first appearance.
std::vector<Bundle> chain_bundles(const std::vector<Bundle>& bundles, std::size_t per_task) {
  std::vector<Bundle> out;
  std::vector<std::size_t> open;       // index in `out` of the chain each layout fills now
  std::vector<const Bundle*> layouts;  // the first bundle of each layout met (of `bundles`)
  std::vector<std::size_t> filled;
  for (const auto& b : bundles) {
    if (b.empty()) continue;
    std::size_t k = 0;
    while (k < layouts.size() && !same_layout(*layouts[k], b)) ++k;
    if (k == layouts.size() || filled[k] == per_task) {
      if (k == layouts.size()) {
        layouts.push_back(&b);
        open.push_back(0);
        filled.push_back(0);
      }
      open[k] = out.size();
      filled[k] = 0;
      out.push_back(b);
    } else {
      Bundle& c = out[open[k]];
      for (std::size_t i = 0; i < b.size(); ++i) {
        c[i].job_id += "+" + b[i].job_id;
        c[i].time_s += b[i].time_s;
      }
    }
    ++filled[k];
  }
  return out;
}

// Packed bundles: one array per time limit (a bundle's limit is its longest step's); a list line
// holds the bundle's steps by id, one word each (one job or a chain ID+ID+...): each step's ranks,
// threads, GPUs and cores are in its jobs' files (meta.planned_gpus/cores, write_job_files), which
// the task body reads through `gridrun job-shape`.
void packed_arrays(const std::vector<Bundle>& plain_bundles, const ScriptOptions& o, std::size_t& counter,
                   ScriptSet& set) {
  const std::vector<Bundle> bundles = chain_bundles(plain_bundles, o.jobs_per_task);
  Groups<std::int64_t, Bundle> groups;
  for (const auto& b : bundles) {
    std::int64_t t = 0;
    for (const auto& st : b) t = std::max(t, st.time_s);
    if (!b.empty()) groups.add(t, b);
  }
  groups.for_each_chunk(o.max_array, [&](std::int64_t limit, const std::vector<const Bundle*>& chunk) {
    Shape shape;  // its steps' footprints are in the list file, one entry each
    shape.fp.device = jobs::Device::gpu;
    shape.packed = true;
    shape.time_s = limit;
    ArrayScript a = new_array(shape, o, counter);
    std::size_t n_jobs = 0;
    for (const Bundle* b : chunk) {
      std::vector<std::string> ids;
      std::string line;
      for (const auto& st : *b) {
        for (const auto& id : base::split(st.job_id, '+')) ids.push_back(id);
        if (!line.empty()) line += ' ';
        line += st.job_id;
      }
      n_jobs += ids.size();
      a.tasks.push_back(std::move(ids));
      a.job_list += line + "\n";
    }
    render_array(a, o, n_jobs);
    set.arrays.push_back(std::move(a));
  });
}

// The collect job: after every array task has ended in any state (afterany: afterok on an array
// with one failed task would never be released).
void collect_script(const ScriptOptions& o, ScriptSet& set) {
  set.collect_path =
      run::RunDir(o.run_dir).slurm_file("s" + std::to_string(o.submission) + "-collect.sbatch");
  std::string& c = set.collect_script;
  c += "#!/bin/bash\n";
  c += "# gridrun run '" + o.run_name + "': builds results.h5 once all arrays of submission " +
       std::to_string(o.submission) + " have ended.\n";
  c += "# Submitted as: sbatch --dependency=afterany:<array ids> " + shell_quote(set.collect_path) + "\n";
  c += "# By hand at any time: " + shell_quote(o.gridrun_bin) + " collect " + shell_quote(o.run_dir) + "\n";
  sbatch_line(c, "--job-name=gridrun-" + o.run_name + "-collect");
  sbatch_line(c, "--nodes=1");
  sbatch_line(c, "--ntasks=1");
  sbatch_line(c, "--cpus-per-task=1");
  sbatch_line(c, "--time=0:30:00");
  sbatch_line(c, "--kill-on-invalid-dep=no");
  sbatch_line(c, "--open-mode=append");
  sbatch_line(c, "--output=" + sbatch_output(o.run_dir, "collect-%j.out"));
  site_lines(c, o, SiteLine::every_script);
  c += "\nexec " + shell_quote(o.gridrun_bin) + " collect " + shell_quote(o.run_dir) + "\n";
}

}  // namespace

ScriptSet generate_scripts(const std::vector<jobs::Job>& jobs, const std::vector<Bundle>& bundles,
                           const ScriptOptions& o) {
  check_script_options(o);
  if (o.run_dir.empty() || o.run_name.empty())
    throw std::invalid_argument("generate_scripts: run_dir and run_name are required");
  ScriptSet set;
  std::size_t counter = 0;
  shape_arrays(jobs, o, counter, set);
  packed_arrays(bundles, o, counter, set);
  collect_script(o, set);
  return set;
}

namespace {
// base::write_file_atomic, then the execute bits for scripts (a failed chmod only costs `bash
// SCRIPT` by hand; sbatch does not need them).
void write_file(const std::string& path, const std::string& text, bool executable) {
  base::write_file_atomic(path, text);
  if (executable) ::chmod(path.c_str(), 0755);
}
}  // namespace

void write_script_set(const ScriptSet& set) {
  for (const auto& a : set.arrays) {
    write_file(a.list_path, a.job_list, false);
    write_file(a.script_path, a.script, true);
  }
  write_file(set.collect_path, set.collect_script, true);
}

}  // namespace gridrun::slurm
