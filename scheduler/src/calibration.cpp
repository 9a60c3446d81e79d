// The calibration figures (see calibration.hpp): configuration keys, predictions from measured
// figures, calibration.json (written and read back, checked), the figures of one calibration
// job file, and the plans and descriptions of side-by-side groups. `gridrun calibrate`, which
// measures them, is calibrate.cpp.
#include "gridrun/scheduler/calibration.hpp"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "executor.hpp"
#include "gridrun/base/checked.hpp"
#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/host.hpp"
#include "gridrun/base/json.hpp"
#include "gridrun/base/json_checked.hpp"
#include "gridrun/base/stats.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/jobs/footprint.hpp"
#include "gridrun/jobs/job.hpp"
#include "gridrun/results/reader.hpp"
#include "gridrun/run/run_dir.hpp"
#include "gridrun/scheduler/placement.hpp"

namespace fs = std::filesystem;

namespace gridrun::scheduler {

namespace {
constexpr const char* kFormat = "gridrun-calibration-1";
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();
}  // namespace

std::string config_key(const jobs::JobParams& in) {
  jobs::JobParams p = in;
  // What is learned or for how long does not change launch, step, evaluation or checkpoint times.
  p.lr = 0.1;
  p.lr_schedule = "constant";
  p.warmup_steps = 0;
  p.scale_lr = false;
  p.momentum = 0.9;
  p.nesterov = false;
  p.weight_decay = 0;
  p.seed = 0;
  p.repeat = 0;  // a repeat trains as the first measurement does
  p.epochs = 1;
  p.max_steps = 0;
  p.eval_every = 1;
  p.target_accuracy = 0;
  p.time_limit = "";
  p.checkpoint_minutes = 0;
  p.comm_timeout_s = 300;
  p.profile_steps = 0;
  return jobs::job_id(p);
}

std::string config_label(const jobs::JobParams& p) {
  std::string s = p.model + " " + to_string(p.device) + " ranks=" + std::to_string(p.ranks) +
                  " bpr=" + std::to_string(p.batch_per_rank);
  if (p.threads_per_rank > 1) s += " threads=" + std::to_string(p.threads_per_rank);
  if (p.nodes > 1) s += " nodes=" + std::to_string(p.nodes);
  if (p.precision != jobs::Precision::fp32) s += " " + base::to_string(p.precision);
  return s;
}

std::string learn_key(const jobs::JobParams& p) {
  jobs::JobParams k;  // defaults everywhere but what decides the learning
  for (const char* name :
       {"optimizer", "lr", "lr_schedule", "warmup_steps", "scale_lr", "momentum", "nesterov", "weight_decay"})
    jobs::set_param(k, name, jobs::get_param(p, name));
  return jobs::job_id(k);
}

double predict_seconds(const jobs::JobParams& p, const StepFigures& f) {
  // 0: a command job whose program declared no steps per epoch (docs/own-script.md); it is
  // predicted by its max_steps alone.
  const bool spe_known = f.steps_per_epoch > 0;
  const std::int64_t spe = std::max<std::int64_t>(f.steps_per_epoch, 1);
  // Saturating: a grid may ask for more epochs than steps fit in 64 bits; the prediction is then
  // the longest one (clamped below), never a wrapped short one.
  std::int64_t total = p.epochs > 0 && spe_known ? base::saturating_mul(p.epochs, spe) : p.max_steps;
  if (p.max_steps > 0) total = std::min(total, p.max_steps);
  total = std::max<std::int64_t>(total, 0);
  // The calibration already reached this job's target: it stops at its first evaluation after
  // as many steps (an evaluation ends every eval_every-th epoch).
  if (p.target_accuracy > 0 && f.final_acc >= p.target_accuracy && f.acc_steps > 0 && p.eval_every > 0 &&
      f.learn_key == learn_key(p)) {
    std::int64_t e = f.acc_steps / spe + (f.acc_steps % spe != 0);
    e = base::saturating_mul(e / p.eval_every + (e % p.eval_every != 0), p.eval_every);
    total = std::min(total, base::saturating_mul(e, spe));
  }
  const std::int64_t epochs = total / spe + (total % spe != 0);
  // Evaluations: every eval_every-th epoch and the last (counted, not looped: epochs may be 2^60).
  const std::int64_t evals =
      p.eval_every > 0 && epochs > 0 ? epochs / p.eval_every + (epochs % p.eval_every != 0) : 0;
  const std::int64_t warm = std::min(total, f.warm_steps);
  const double warm_s =
      f.warm_steps > 0 ? f.warm_s * static_cast<double>(warm) / static_cast<double>(f.warm_steps) : 0;
  const double train = warm_s + static_cast<double>(total - warm) * f.step_s;
  // Finite and in the engine's range by construction (read_calibration checked every figure);
  // the clamp covers a caller's own figures too (issue 45: a NaN here hung `simulate`).
  return engine_seconds(f.launch_s + train + static_cast<double>(evals) * f.eval_s +
                        static_cast<double>(epochs) * f.checkpoint_s + f.tail_s);
}

jobs::JobParams calibration_params(const jobs::JobParams& in, std::int64_t steps, std::int64_t seed) {
  jobs::JobParams p = in;
  // A command job's program gets its epochs as it would in the run ({epochs}); the step limit
  // (GRIDRUN_MAX_STEPS, {max_steps}) is what makes the run short.
  if (jobs::model_kind(p) != jobs::ModelKind::command) p.epochs = 0;
  p.max_steps = p.timing_warmup_steps + steps;
  // A job that stops at a target: run to its first evaluation when that is near (within 4x the
  // steps), so the accuracy there says whether it stops at once (predict_seconds).
  const std::int64_t per_step = std::max<std::int64_t>(base::saturating_mul(p.batch_per_rank, p.ranks), 1);
  if (in.target_accuracy > 0 && in.train_samples > 0 && in.eval_every > 0) {
    const std::int64_t first_eval =
        base::saturating_mul(std::max<std::int64_t>(in.train_samples / per_step, 1), in.eval_every);
    if (first_eval > p.max_steps && first_eval <= base::saturating_mul<std::int64_t>(4, p.max_steps))
      p.max_steps = first_eval;
  }
  p.target_accuracy = 0;
  p.time_limit = "";
  p.checkpoint_minutes = 0;
  p.profile_steps = 0;
  p.seed = seed;
  return p;
}

std::vector<std::vector<std::size_t>> plan_alone_processes(const std::vector<jobs::JobParams>& configs) {
  std::vector<std::vector<std::size_t>> out;
  std::map<std::string, std::size_t> of_key;
  for (std::size_t i = 0; i < configs.size(); ++i) {
    const auto [it, fresh] = of_key.emplace(jobs::process_key(configs[i]).text(), out.size());
    if (fresh) out.emplace_back();
    out[it->second].push_back(i);
  }
  return out;
}

std::int64_t known_steps(const jobs::JobParams& p) {
  if (p.epochs <= 0) return std::max<std::int64_t>(p.max_steps, 0);
  if (p.train_samples <= 0) return 0;  // the data set's own size: known to the runner only
  // As the runner counts them (EpochSampler): floor(samples / (batch per rank x ranks)), at least 1.
  const std::int64_t per_step = std::max<std::int64_t>(base::saturating_mul(p.batch_per_rank, p.ranks), 1);
  const std::int64_t total =
      base::saturating_mul(p.epochs, std::max<std::int64_t>(p.train_samples / per_step, 1));
  return p.max_steps > 0 ? std::min(total, p.max_steps) : total;
}

std::int64_t capped_steps(std::int64_t steps, std::int64_t longest, std::int64_t warmup) {
  if (longest <= 0) return steps;
  return std::clamp<std::int64_t>(longest - std::max<std::int64_t>(warmup, 0), 3,
                                  std::max<std::int64_t>(steps, 3));
}

std::string short_grid_note(double calibration_s, double grid_s, const std::string& grid) {
  if (!(calibration_s > 0) || !(grid_s > 0) || calibration_s < grid_s) return "";
  return "note: this grid is so short that running it (predicted " + base::format_duration(grid_s) +
         ") costs less than predicting it (calibration " + base::format_duration(calibration_s) +
         "): run it (`gridrun run " + grid + "`) instead of calibrating it";
}

std::string build_fingerprint(const std::string& train_bin) {
  // A bare name is the file mpirun would start: the first on PATH.
  std::string path = train_bin;
  if (!path.empty() && path.find('/') == std::string::npos) {
    path.clear();
    const char* env = std::getenv("PATH");
    std::istringstream dirs(env ? env : "");
    for (std::string dir; std::getline(dirs, dir, ':');)
      if (!dir.empty() && ::access((dir + "/" + train_bin).c_str(), X_OK) == 0) {
        path = dir + "/" + train_bin;
        break;
      }
  }
  struct stat st {};
  if (path.empty() || ::stat(path.c_str(), &st) != 0) return "";
  return std::to_string(static_cast<long long>(st.st_size)) + "-" +
         std::to_string(static_cast<long long>(st.st_mtime));
}

namespace {

base::Json figures_json(const StepFigures& f) {
  base::Json j = base::Json::object();
  j["launch_s"] = base::json_number(f.launch_s, 6);
  if (std::isfinite(f.warm_launch_s)) j["warm_launch_s"] = base::json_number(f.warm_launch_s, 6);
  j["warm_s"] = base::json_number(f.warm_s, 6);
  j["warm_steps"] = f.warm_steps;
  j["step_s"] = base::json_number(f.step_s, 6);
  j["eval_s"] = base::json_number(f.eval_s, 6);
  j["checkpoint_s"] = base::json_number(f.checkpoint_s, 6);
  j["tail_s"] = base::json_number(f.tail_s, 6);
  j["steps_per_epoch"] = f.steps_per_epoch;
  j["final_acc"] = base::json_number(f.final_acc, 6);
  j["acc_steps"] = f.acc_steps;
  j["learn_key"] = f.learn_key;
  if (std::isfinite(f.other_cpu_share)) j["other_cpu_share"] = base::json_number(f.other_cpu_share, 4);
  return j;
}

// One bad figure of a calibration file: `what` said of `key` in `where`.
struct BadFigure {
  std::string key, what;
};

// A duration of a figures object: absent is `fallback` (NaN: required), else a number, finite, in
// [0, kMaxCalibratedSeconds]. Why so strict: the schedule adds these up and the simulator orders
// events by them, and a NaN there never advanced its clock (issue 45: `simulate` and `run` hung).
std::optional<BadFigure> read_seconds(const base::Json& j, const char* key, double fallback, double& out) {
  const auto it = j.find(key);
  if (it == j.end() || (it->is_null() && std::isnan(fallback))) {
    if (std::isnan(fallback)) return BadFigure{key, "missing"};
    out = fallback;
    return std::nullopt;
  }
  if (!it->is_number()) return BadFigure{key, "not a number (" + base::dump_line(*it).substr(0, 40) + ")"};
  const double v = it->get<double>();
  if (!std::isfinite(v) || v < 0 || v > kMaxCalibratedSeconds)
    return BadFigure{key, base::dump_line(*it).substr(0, 40) + " s is outside 0 .. " +
                              base::format_fixed(kMaxCalibratedSeconds, 0) + " s"};
  out = v;
  return std::nullopt;
}

// A count of a figures object: absent is 0, else an integer in [min, kMaxCalibratedCount].
std::optional<BadFigure> read_count(const base::Json& j, const char* key, std::int64_t min,
                                    std::int64_t& out) {
  const auto it = j.find(key);
  if (it == j.end()) {
    if (min > 0) return BadFigure{key, "missing"};
    out = 0;
    return std::nullopt;
  }
  const bool integer = it->is_number_integer() &&
                       (!it->is_number_unsigned() ||
                        it->get<std::uint64_t>() <= static_cast<std::uint64_t>(kMaxCalibratedCount));
  const std::int64_t v = integer ? it->get<std::int64_t>() : 0;
  if (!integer || v < min || v > kMaxCalibratedCount)
    return BadFigure{key, base::dump_line(*it).substr(0, 40) + " is not a whole number in " +
                              std::to_string(min) + " .. " + std::to_string(kMaxCalibratedCount)};
  out = v;
  return std::nullopt;
}

// A share of the CPU (0-1); absent or null stays NaN (files from before issue 58 recorded none).
std::optional<BadFigure> read_share(const base::Json& j, const char* key, double& out) {
  const auto it = j.find(key);
  if (it == j.end() || it->is_null()) return std::nullopt;
  const double v = it->is_number() ? it->get<double>() : kNaN;
  if (!(v >= 0 && v <= 1)) return BadFigure{key, base::dump_line(*it).substr(0, 40) + " is not in 0 .. 1"};
  out = v;
  return std::nullopt;
}

// The figures of one configuration, checked completely (types, finiteness, ranges); the first bad
// key when any is bad: the caller then drops the whole entry, since a configuration predicted from
// half its figures is a wrong prediction that looks right.
std::optional<BadFigure> figures_of(const base::Json& j, StepFigures& f) {
  if (!j.is_object()) return BadFigure{"", "not a JSON object"};
  std::optional<BadFigure> bad;
  if ((bad = read_seconds(j, "launch_s", kNaN, f.launch_s))) return bad;
  // Optional (files from before warm launches have none): absent stays NaN, a warm launch unknown.
  if (j.contains("warm_launch_s") && (bad = read_seconds(j, "warm_launch_s", 0, f.warm_launch_s))) return bad;
  if ((bad = read_seconds(j, "step_s", kNaN, f.step_s))) return bad;
  if ((bad = read_seconds(j, "warm_s", 0, f.warm_s))) return bad;
  if ((bad = read_seconds(j, "eval_s", 0, f.eval_s))) return bad;
  if ((bad = read_seconds(j, "checkpoint_s", 0, f.checkpoint_s))) return bad;
  if ((bad = read_seconds(j, "tail_s", 0, f.tail_s))) return bad;
  if ((bad = read_count(j, "warm_steps", 0, f.warm_steps))) return bad;
  if ((bad = read_count(j, "steps_per_epoch", 1, f.steps_per_epoch))) return bad;
  if ((bad = read_count(j, "acc_steps", 0, f.acc_steps))) return bad;
  // An accuracy is a fraction; null (or absent) when the calibration job never evaluated.
  if (const auto it = j.find("final_acc"); it != j.end() && !it->is_null()) {
    const double a = it->is_number() ? it->get<double>() : kNaN;
    if (!(a >= 0 && a <= 1))
      return BadFigure{"final_acc", base::dump_line(*it).substr(0, 40) + " is not in 0 .. 1"};
    f.final_acc = a;
  }
  if (const auto it = j.find("learn_key"); it != j.end()) {
    if (!it->is_string()) return BadFigure{"learn_key", "not a string"};
    f.learn_key = it->get<std::string>();
  }
  if ((bad = read_share(j, "other_cpu_share", f.other_cpu_share))) return bad;
  return std::nullopt;
}

// "PATH: configs.KEY.step_s: missing; ...": one warning line, printable.
std::string bad_figure_line(const std::string& path, const std::string& where, const BadFigure& b,
                            const char* consequence) {
  return base::printable_line(path + ": " + where + (b.key.empty() ? "" : "." + b.key) + ": " + b.what +
                              "; " + consequence);
}

}  // namespace

void write_calibration(const std::string& path, const Calibration& c) {
  base::Json j = base::Json::object();
  j["format"] = kFormat;
  j["host"] = c.host;
  j["train_bin"] = c.train_bin;
  j["build"] = c.build;
  j["torch_version"] = c.versions.torch;
  j["gridrun_version"] = c.versions.gridrun;
  j["created"] = c.created;
  j["cost_s"] = base::json_number(c.cost_s, 6);
  base::Json cond = base::Json::object();
  cond["max_other_cpu_share"] = base::json_number(c.conditions.max_other_cpu_share, 4);
  cond["repeated"] = c.conditions.repeated;
  cond["accepted_load"] = c.conditions.accepted_load;
  j["conditions"] = std::move(cond);
  base::Json configs = base::Json::object();
  for (const auto& [key, f] : c.alone) {
    base::Json one = figures_json(f);
    const auto l = c.labels.find(key);
    one["label"] = l == c.labels.end() ? std::string() : l->second;
    base::append_new_member(configs, key, std::move(one));
  }
  j["configs"] = std::move(configs);
  base::Json groups = base::Json::array();
  for (const auto& g : c.groups) {
    base::Json one = base::Json::object();
    one["members"] = g.members;
    base::Json figs = base::Json::object();
    for (const auto& [key, f] : g.figures) base::append_new_member(figs, key, figures_json(f));
    one["figures"] = std::move(figs);
    groups.push_back(std::move(one));
  }
  j["groups"] = std::move(groups);
  base::write_file_atomic(path, base::checked_json_text(j, 1));
}

Calibration read_calibration(const std::string& path) {
  const base::Json j = base::read_checked_json_file(path, base::kinds::kCalibration);
  if (!j.is_object() || base::get_string(j, "format") != kFormat)
    throw std::runtime_error(path + ": not a gridrun calibration (format " + kFormat + ")");
  // What says whose calibration this is must be there and be text: a file that cannot say where
  // it was made is not used at all (usable_calibration names why).
  auto text = [&](const char* key, bool required) {
    const auto it = j.find(key);
    if (it == j.end() && !required) return std::string();
    if (it == j.end() || !it->is_string())
      throw std::runtime_error(path + ": " + key + ": expected a string (a damaged calibration)");
    return it->get<std::string>();
  };
  Calibration c;
  c.host = text("host", true);
  c.build = text("build", true);
  c.train_bin = text("train_bin", false);
  c.versions.torch = text("torch_version", false);
  c.versions.gridrun = text("gridrun_version", false);
  c.created = text("created", false);
  {
    if (const auto bad = read_seconds(j, "cost_s", 0, c.cost_s)) {
      c.warnings.push_back(bad_figure_line(path, "cost_s", BadFigure{"", bad->what}, "ignored"));
      c.cost_s = 0;
    }
  }
  // The conditions are what a reader trusts the figures by: a damaged entry is said, and read as
  // "not recorded" (never as quiet).
  if (const auto it = j.find("conditions"); it != j.end()) {
    std::optional<BadFigure> bad;
    std::int64_t repeated = 0;
    if (!it->is_object())
      bad = BadFigure{"", "not an object"};
    else if (!(bad = read_share(*it, "max_other_cpu_share", c.conditions.max_other_cpu_share)) &&
             !(bad = read_count(*it, "repeated", 0, repeated))) {
      c.conditions.repeated = static_cast<int>(std::min<std::int64_t>(repeated, 1 << 30));
      const auto a = it->find("accepted_load");
      if (a != it->end() && !a->is_boolean())
        bad = BadFigure{"accepted_load", "not true or false"};
      else
        c.conditions.accepted_load = a != it->end() && a->get<bool>();
    }
    if (bad) {
      c.warnings.push_back(bad_figure_line(path, "conditions", *bad, "its load is read as not recorded"));
      c.conditions = CalibrationConditions{};
    }
  }
  for (const char* key : {"configs", "groups"})
    if (const auto it = j.find(key);
        it != j.end() && !(std::string(key) == "configs" ? it->is_object() : it->is_array()))
      throw std::runtime_error(path + ": " + key + ": expected " +
                               (std::string(key) == "configs" ? "an object" : "an array") +
                               " (a damaged calibration)");
  // A bad entry costs that entry only: its configuration is predicted by the cost model, or
  // alone instead of in its group, and the warning says which.
  if (const auto it = j.find("configs"); it != j.end())
    for (const auto& [key, v] : it->items()) {
      StepFigures f;
      if (const auto bad = figures_of(v, f)) {
        c.warnings.push_back(
            bad_figure_line(path, "configs." + key, *bad, "that configuration is uncalibrated"));
        continue;
      }
      const auto label = v.find("label");
      if (label != v.end() && !label->is_string()) {
        c.warnings.push_back(bad_figure_line(path, "configs." + key, BadFigure{"label", "not a string"},
                                             "that configuration is uncalibrated"));
        continue;
      }
      c.alone[key] = f;
      c.labels[key] = label == v.end() ? std::string() : label->get<std::string>();
    }
  if (const auto it = j.find("groups"); it != j.end())
    for (std::size_t gi = 0; gi < it->size(); ++gi) {
      const base::Json& g = (*it)[gi];
      const std::string where = "groups[" + std::to_string(gi) + "]";
      const char* consequence = "that group is ignored (its members predicted alone)";
      const auto m = g.is_object() ? g.find("members") : g.end();
      const auto figs = g.is_object() ? g.find("figures") : g.end();
      if (!g.is_object() || m == g.end() || !m->is_array() || m->size() < 2 ||
          !std::all_of(m->begin(), m->end(), [](const base::Json& k) { return k.is_string(); })) {
        c.warnings.push_back(bad_figure_line(
            path, where, BadFigure{"members", "not a list of 2 or more config keys"}, consequence));
        continue;
      }
      if (figs == g.end() || !figs->is_object()) {
        c.warnings.push_back(
            bad_figure_line(path, where, BadFigure{"figures", "not an object"}, consequence));
        continue;
      }
      CalibrationGroup cg;
      for (const auto& k : *m) cg.members.push_back(k.get<std::string>());
      // group_figures compares members with a sorted multiset of config keys.
      std::sort(cg.members.begin(), cg.members.end());
      bool ok = true;
      for (const auto& [key, v] : figs->items()) {
        StepFigures f;
        if (const auto bad = figures_of(v, f)) {
          c.warnings.push_back(bad_figure_line(path, where + ".figures." + key, *bad, consequence));
          ok = false;
          break;
        }
        cg.figures[key] = f;
      }
      if (ok) c.groups.push_back(std::move(cg));
    }
  return c;
}

std::unique_ptr<Calibration> usable_calibration(const std::string& run_dir, const std::string& train_bin,
                                                bool on_slurm, std::string& why) {
  why.clear();
  const std::string path = run::RunDir(run_dir).calibration_file();
  std::error_code ec;
  if (!fs::is_regular_file(path, ec)) return nullptr;
  Calibration c;
  try {
    c = read_calibration(path);
  } catch (const std::exception& e) {
    why = base::printable_line(e.what());
    return nullptr;
  }
  const std::string host = on_slurm ? std::string("slurm") : base::hostname();
  if (c.host != host) {
    why = path + " was made " + (c.host == "slurm" ? std::string("through Slurm") : "on " + c.host) +
          ", not " + (on_slurm ? std::string("through Slurm (`gridrun calibrate --slurm`)") : "on " + host) +
          "; run `gridrun calibrate` there";
    return nullptr;
  }
  if (c.build != build_fingerprint(train_bin)) {
    why = path + " was made with another build of gridrun-train (" + c.train_bin +
          "); run `gridrun calibrate` again";
    return nullptr;
  }
  return std::make_unique<Calibration>(std::move(c));
}

std::optional<StepFigures> figures_from_file(const std::string& result_file, const FigureOptions& o,
                                             BuildVersions& versions, std::string& why) {
  results::JobData d;
  try {
    d = results::read_job(result_file);
  } catch (const std::exception& e) {
    why = base::printable_line(e.what());
    return std::nullopt;
  }
  if (d.status != "completed") {
    why = result_file + ": status " + d.status + " (" + d.exit_reason + ")";
    return std::nullopt;
  }
  versions.torch = d.attr_string("torch_version");
  versions.gridrun = d.attr_string("gridrun_version") + " (" + d.attr_string("git_commit") + ")";
  auto sum = [&](const char* name) {
    const auto it = d.summary.find(name);
    return it == d.summary.end() ? kNaN : it->second;
  };
  // A step without its time (NaN: a command job's first step, whose start gridrun-exec cannot
  // see; its time is then part of the launch) counts as 0 s.
  std::vector<double> step_times;
  if (const std::vector<double>* col = d.steps.column("step_s"))
    for (double v : *col) step_times.push_back(std::isfinite(v) ? v : 0.0);
  const std::vector<double>* steps = d.steps.column("step_s") ? &step_times : nullptr;
  const double launched = sum("launched_unix"), first = sum("first_step_unix"),
               finished = sum("finished_unix");
  if (!steps || steps->size() < 2 || !std::isfinite(launched) || !std::isfinite(first) ||
      !std::isfinite(finished)) {
    why = result_file + ": no step timings or launch times (a gridrun-train from before them?)";
    return std::nullopt;
  }
  StepFigures f;
  const std::size_t n = steps->size();
  const std::size_t warm =
      std::min<std::size_t>(static_cast<std::size_t>(std::max<std::int64_t>(o.warmup_steps, 0)), n - 1);
  double all = 0;
  for (double v : *steps) all += v;
  for (std::size_t k = 0; k < warm; ++k) f.warm_s += (*steps)[k];
  f.warm_steps = static_cast<std::int64_t>(warm);
  // The loop's own time between steps (rows, flushes, the epoch's end minus evaluation and
  // checkpoint) is spread over the steps.
  const double loop_extra = std::max(0.0, sum("time_train_s") - all) / static_cast<double>(n);
  // Side by side the steady steps' mean, from the sums above (warm < n: one steady step at least).
  const double steady_s =
      o.side_by_side
          ? (all - f.warm_s) / static_cast<double>(n - warm)
          : base::median(std::vector<double>(steps->begin() + static_cast<long>(warm), steps->end()));
  f.step_s = steady_s + loop_extra;
  f.warm_s += loop_extra * static_cast<double>(warm);
  // Never below 0: a first step stamped before the launch is the clocks of two hosts disagreeing
  // (and the reader refuses a negative duration).
  f.launch_s = std::max(0.0, first - launched);
  // A warm launch is the job's own set-up without creating a communicator (the first job of a
  // process has one to create; files from before time_comm_s count it, slightly long).
  if (const double setup = sum("time_setup_s"); std::isfinite(setup)) {
    const double comm = sum("time_comm_s");
    f.warm_launch_s = std::max(0.0, setup - (std::isfinite(comm) ? comm : 0.0));
  }
  f.launched_warm = sum("launch_warm") == 1.0;
  std::int64_t evals = 0;
  if (const auto* acc = d.epochs.column("test_acc"))
    for (double a : *acc) evals += std::isfinite(a) ? 1 : 0;
  const auto epochs = static_cast<std::int64_t>(d.epochs.rows);
  const double eval = sum("time_eval_s"), ckpt = sum("time_checkpoint_s");
  f.eval_s = evals > 0 && std::isfinite(eval) ? eval / static_cast<double>(evals) : 0;
  f.checkpoint_s = epochs > 0 && std::isfinite(ckpt) ? ckpt / static_cast<double>(epochs) : 0;
  f.tail_s = std::isfinite(o.tail_s)      ? std::max(0.0, o.tail_s)
             : std::isfinite(o.exit_unix) ? std::max(0.0, o.exit_unix - finished)
                                          : 0;
  f.steps_per_epoch = static_cast<std::int64_t>(d.attr_number("steps_per_epoch", 0));
  // gridrun-exec (a command job) knows it only at the end: /summary, 0 when the program said none.
  const bool command = d.params && jobs::model_kind(*d.params) == jobs::ModelKind::command;
  if (command && f.steps_per_epoch <= 0 && std::isfinite(sum("steps_per_epoch")))
    f.steps_per_epoch = std::max<std::int64_t>(0, static_cast<std::int64_t>(sum("steps_per_epoch")));
  if (const auto* acc = d.epochs.column("test_acc"); acc && !acc->empty() && std::isfinite(acc->back())) {
    f.final_acc = acc->back();
    f.acc_steps = static_cast<std::int64_t>(n);
  }
  if (d.params) f.learn_key = learn_key(*d.params);
  if (f.steps_per_epoch <= 0 && !command) {
    why = result_file + ": does not say its steps per epoch";
    return std::nullopt;
  }
  return f;
}

namespace {

std::string ms(double s) {
  if (!std::isfinite(s)) return "-";
  return s < 1 ? base::format_fixed(1000 * s, 1) + " ms" : base::format_fixed(s, 2) + " s";
}

}  // namespace

std::optional<GroupRun> plan_group_run(const Calibration& c, const std::vector<std::string>& keys,
                                       std::int64_t min_steps, double train_s) {
  GroupRun g;
  for (const auto& key : keys) {
    const auto it = c.alone.find(key);
    if (it == c.alone.end()) return std::nullopt;
    const StepFigures& f = it->second;
    const double step = std::max(f.step_s, 1e-4);
    g.steps.push_back(
        std::clamp<std::int64_t>(static_cast<std::int64_t>(std::ceil(train_s / step)), min_steps, 100000));
    g.longest_s = std::max(g.longest_s,
                           f.launch_s + f.warm_s + static_cast<double>(g.steps.back()) * f.step_s + f.tail_s);
    const auto l = c.labels.find(key);
    g.label += (g.label.empty() ? "" : " + ") + (l == c.labels.end() ? key : l->second);
  }
  return g;
}

std::string describe_conditions(const Calibration& c) {
  const std::string when = base::iso_minutes(c.created);
  std::string out = "calibrated " + (c.host == "slurm" ? std::string("through Slurm") : "on " + c.host) +
                    (when.empty() ? "" : " " + when);
  const double share = c.conditions.max_other_cpu_share;
  if (!std::isfinite(share) && c.host == "slurm") return out;  // its nodes' other jobs: the run's report says
  if (!std::isfinite(share))
    return out +
           ", load not recorded (a calibration from before gridrun recorded it: calibrate again to know)";
  const std::string pct = base::format_fixed(100 * share, 0) + " %";
  if (share <= kCalibrationLoadShare)
    return out + ", other processes took at most " + pct + " of the CPU" +
           (c.conditions.repeated > 0
                ? " (" + std::to_string(c.conditions.repeated) + " disturbed measurement(s) taken again)"
                : "");
  return out + ", WARNING: other processes took up to " + pct + " of the CPU while it measured (kept with " +
         "--accept-load): its times are likely too long, and so is this prediction; calibrate again on a "
         "quiet "
         "machine";
}

std::string describe_alone(const StepFigures& f) {
  return "launch " + ms(f.launch_s) + ", step " + ms(f.step_s) + ", eval " + ms(f.eval_s);
}

std::string describe_group(const Calibration& c, const CalibrationGroup& g) {
  std::string s;
  for (const auto& [key, f] : g.figures) {
    const auto l = c.labels.find(key);
    const auto a = c.alone.find(key);
    s += (s.empty() ? "" : "; ") + (l == c.labels.end() ? key : l->second) + " step " + ms(f.step_s) + " (x" +
         base::format_fixed(a == c.alone.end() ? std::nan("") : f.step_s / a->second.step_s, 2) +
         "), launch " + ms(f.launch_s);
  }
  return s;
}

}  // namespace gridrun::scheduler
