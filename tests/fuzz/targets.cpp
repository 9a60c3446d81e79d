// See targets.hpp. Each target feeds one input to one reader exactly as gridrun reads such a file;
// readers that take a path get a private temporary file (one per process, rewritten each time).
#include "targets.hpp"

#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <limits>
#include <stdexcept>

#include "gridrun/dataset/data_file.hpp"
#include "gridrun/jobs/grid.hpp"
#include "gridrun/jobs/job.hpp"
#include "gridrun/results/reader.hpp"
#include "gridrun/run/prediction.hpp"
#include "gridrun/run/run_dir.hpp"
#include "gridrun/scheduler/calibrate.hpp"
#include "gridrun/scheduler/resources.hpp"
#include "gridrun/scheduler/simulate.hpp"
#include "gridrun/slurm/slurm_cli.hpp"

namespace fs = std::filesystem;

namespace gridrun::fuzz {
namespace {

std::string text(const std::uint8_t* d, std::size_t n) {
  return std::string(reinterpret_cast<const char*>(d), n);
}

// A folder of this process's own, made once and removed at exit by its owner object.
class Scratch {
 public:
  Scratch() {
    std::string tmpl = (fs::temp_directory_path() / "gridrun-fuzz-XXXXXX").string();
    if (!::mkdtemp(tmpl.data())) throw std::runtime_error("fuzz: cannot create a scratch folder");
    dir_ = tmpl;
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  Scratch(const Scratch&) = delete;
  Scratch& operator=(const Scratch&) = delete;
  const fs::path& dir() const { return dir_; }

 private:
  fs::path dir_;
};

fs::path write_input(const fs::path& path, const std::uint8_t* d, std::size_t n);

const fs::path& scratch() {
  static const Scratch s;  // function-local: created on first use, removed at exit
  return s.dir();
}

}  // namespace

std::string write_scratch_file(const std::string& name, const std::uint8_t* d, std::size_t n) {
  return write_input(scratch() / name, d, n).string();
}

namespace {

fs::path write_input(const fs::path& path, const std::uint8_t* d, std::size_t n) {
  fs::create_directories(path.parent_path());
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  f.write(reinterpret_cast<const char*>(d), static_cast<std::streamsize>(n));
  if (!f) throw std::logic_error("fuzz: cannot write " + path.string());  // not the reader's fault
  return path;
}

Verdict grid(const std::uint8_t* d, std::size_t n, const TargetOptions&) {
  // The product's own limit on the number of jobs (a fuzzed grid of a billion jobs is a refusal
  // named by the grid, not a hang): LoadOptions' default, as `gridrun plan` and `run` use it. The
  // jobs are streamed (on_job), not kept, so a large valid grid costs time, not memory.
  jobs::LoadOptions o;
  o.on_job = [](std::size_t, const std::string&, const std::vector<jobs::Value>&) {};
  return judge("fuzz.yaml", [&] { jobs::load_grid_string(text(d, n), "fuzz.yaml", o); });
}

Verdict cluster(const std::uint8_t* d, std::size_t n, const TargetOptions&) {
  return judge("fuzz-cluster.yaml", [&] { scheduler::load_cluster_string(text(d, n), "fuzz-cluster.yaml"); });
}

Verdict job_json(const std::uint8_t* d, std::size_t n, const TargetOptions&) {
  return judge("fuzz.json", [&] { jobs::job_from_json(text(d, n), "fuzz.json"); });
}

Verdict state(const std::uint8_t* d, std::size_t n, const TargetOptions&) {
  const fs::path run = scratch() / "run";
  write_input(run / "state.json", d, n);
  return judge("state.json", [&] { run::RunDir(run.string()).load_state(); });
}

Verdict h5_result(const std::uint8_t* d, std::size_t n, const TargetOptions& opts) {
  const fs::path f = write_input(scratch() / "job.h5", d, n);
  results::ReadOptions ro;
  ro.isolate = opts.isolate;
  // A read that hangs inside libhdf5 (fuzzing found one: H5HG_read looping on a damaged global
  // heap, minutes) is killed after this long and reported as a damaged file. The product waits
  // 60 s (a large healthy file on a slow disk is not a hang); 3 s keeps a campaign's two guarded
  // reads per input inside libFuzzer's -timeout=10 and the corpus replay short.
  ro.isolate_timeout_s = 3;
  ro.tables = false;  // what `run` and `status` read
  const Verdict shallow = judge("job.h5", [&] { results::read_job(f.string(), ro); });
  ro.tables = true;  // what `collect` and `report` read
  const Verdict whole = judge("job.h5", [&] { results::derive_summary(results::read_job(f.string(), ro)); });
  // One verdict per file (docs/results.md): both depths must agree, in the guarded read.
  if (opts.isolate && shallow.outcome != whole.outcome)
    throw std::logic_error(std::string("the summary read says ") + to_string(shallow.outcome) +
                           " but the whole read " + to_string(whole.outcome));
  return worst({shallow, whole});
}

Verdict slurm_text(const std::uint8_t* d, std::size_t n, const TargetOptions&) {
  const std::string t = text(d, n);
  return worst({judge("squeue", [&] { slurm::parse_squeue(t); }),
                judge("scontrol", [&] { slurm::parse_scontrol(t); }),
                judge("sacct", [&] { slurm::parse_sacct(t); }),
                judge("slurm.conf", [&] { slurm::parse_max_array_size(t); })});
}

Verdict data_file(const std::uint8_t* d, std::size_t n, const TargetOptions& opts) {
  // dataset=hdf5's file (issue 33): the planner's check (in a forked copy, as `gridrun plan` reads
  // it) or, in a campaign, DataFile::open in process.
  const fs::path f = write_input(scratch() / "data.h5", d, n);
  jobs::JobParams j;
  j.dataset = "hdf5";
  j.data_file = f.string();
  j.model = "torchscript";
  return judge("data.h5", [&] {
    const std::string why =
        opts.isolate ? dataset::check_job_data_file(j) : dataset::check_data_file(j.data_file, -1);
    if (!why.empty()) throw std::runtime_error(why);
  });
}

// What the readers of calibration.json and prediction.json left out (one warning per bad entry)
// is this target's rejection: its verdict in EXPECTED names the file and key of the first.
void reject_on_warnings(const std::vector<std::string>& warnings) {
  if (!warnings.empty()) throw std::runtime_error(warnings.front());
}

Verdict calibration(const std::uint8_t* d, std::size_t n, const TargetOptions&) {
  // calibration.json as `simulate` and `run` read it (issue 45: a missing or non-number step_s
  // hung both), then what they compute from it: every prediction from every figure kept must be
  // finite and in the engine's range, and a schedule of them must end.
  const fs::path run = scratch() / "run";
  write_input(run / "calibration.json", d, n);
  return judge("calibration.json", [&] {
    const scheduler::Calibration c = scheduler::read_calibration((run / "calibration.json").string());
    std::vector<const scheduler::StepFigures*> all;
    for (const auto& [key, f] : c.alone) all.push_back(&f);
    for (const auto& g : c.groups)
      for (const auto& [key, f] : g.figures) all.push_back(&f);
    jobs::JobParams small, huge;
    huge.epochs = std::numeric_limits<std::int64_t>::max();
    huge.target_accuracy = 0.5;
    std::vector<scheduler::SimJob> sims;
    for (const auto* f : all)
      for (const auto* p : {&small, &huge}) {
        const double s = scheduler::predict_seconds(*p, *f);
        if (!(s >= 0 && s <= scheduler::kMaxEngineSeconds))
          throw std::logic_error("calibration: a prediction of " + std::to_string(s) +
                                 " s from figures read");
        if (sims.size() < 64) {
          scheduler::SimJob j;
          j.id = "j";
          j.id += std::to_string(sims.size());
          j.duration_s = s;
          // Warm launches too (SimOptions::warm below): what a figures file says a warm job saves.
          j.launch_key = j.id.substr(0, 1);  // one key for all: each may take another's worker
          j.warm_saving_s =
              std::isfinite(f->warm_launch_s) ? f->launch_s + f->tail_s - f->warm_launch_s : 0.0;
          sims.push_back(j);
        }
      }
    scheduler::Cluster cluster;
    cluster.nodes.push_back(scheduler::Node{});
    cluster.nodes.back().name = "n";
    cluster.nodes.back().cores = {0, 1};
    for (const bool warm : {false, true}) {
      scheduler::SimOptions so;
      so.warm = warm;
      const auto r = scheduler::simulate(cluster, sims, so);
      if (!std::isfinite(r.makespan_s)) throw std::logic_error("calibration: a makespan that is not finite");
    }
    reject_on_warnings(c.warnings);
  });
}

Verdict prediction(const std::uint8_t* d, std::size_t n, const TargetOptions&) {
  // prediction.json as `report` and `status` read it: every figure kept is finite and >= 0.
  const fs::path run = scratch() / "run";
  write_input(run / "prediction.json", d, n);
  return judge("prediction.json", [&] {
    const run::Prediction p = run::read_prediction((run / "prediction.json").string());
    auto sane = [](double s) { return s >= 0 && s <= run::kMaxPredictedSeconds; };
    bool ok = std::isnan(p.makespan_s) || sane(p.makespan_s);
    for (const auto& [name, ph] : p.phases) ok = ok && sane(ph.makespan_s) && ph.max_running <= ph.jobs;
    for (const auto& [id, s] : p.job_seconds) ok = ok && sane(s);
    if (!ok || p.phase_order.size() != p.phases.size())
      throw std::logic_error("prediction: a figure read that is out of range");
    reject_on_warnings(p.warnings);
  });
}

}  // namespace

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {{"grid", grid},
                                          {"cluster", cluster},
                                          {"job_json", job_json},
                                          {"state", state},
                                          {"h5_result", h5_result},
                                          {"slurm_text", slurm_text},
                                          {"checkpoint", checkpoint},
                                          {"model_file", model_file},
                                          {"data_file", data_file},
                                          {"calibration", calibration},
                                          {"prediction", prediction}};
  return all;
}

const char* to_string(Outcome o) {
  switch (o) {
    case Outcome::Accepted: return "accepted";
    case Outcome::Rejected: return "rejected";
    case Outcome::Damaged: return "damaged";
  }
  return "?";
}

const Target* find_target(const std::string& name) {
  for (const auto& t : targets())
    if (name == t.name) return &t;
  return nullptr;
}

}  // namespace gridrun::fuzz
