// See targets.hpp. Each target feeds one input to one reader exactly as gridrun reads such a file;
// readers that take a path get a private temporary file (one per process, rewritten each time).
#include "targets.hpp"

#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "gridrun/jobs/grid.hpp"
#include "gridrun/jobs/job.hpp"
#include "gridrun/results/reader.hpp"
#include "gridrun/scheduler/resources.hpp"
#include "gridrun/scheduler/run_dir.hpp"
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

// gridrun's own clear errors: the exception types its readers document, with a message.
template <class Fn>
void expect_clear_errors(Fn&& fn) {
  try {
    fn();
  } catch (const std::invalid_argument& e) {
    if (!*e.what()) throw std::logic_error("invalid_argument without a message");
  } catch (const std::runtime_error& e) {
    if (!*e.what()) throw std::logic_error("runtime_error without a message");
  }
}

void grid(const std::uint8_t* d, std::size_t n, const TargetOptions&) {
  jobs::LoadOptions o;
  o.max_jobs = 10000;  // a fuzzed grid of a billion jobs is a valid refusal, not a hang
  expect_clear_errors([&] { jobs::load_grid_string(text(d, n), "fuzz.yaml", o); });
}

void cluster(const std::uint8_t* d, std::size_t n, const TargetOptions&) {
  expect_clear_errors([&] { scheduler::load_cluster_string(text(d, n), "fuzz-cluster.yaml"); });
}

void job_json(const std::uint8_t* d, std::size_t n, const TargetOptions&) {
  expect_clear_errors([&] { jobs::job_from_json(text(d, n), "fuzz.json"); });
}

void state(const std::uint8_t* d, std::size_t n, const TargetOptions&) {
  const fs::path run = scratch() / "run";
  write_input(run / "state.json", d, n);
  expect_clear_errors([&] { scheduler::RunDir(run.string()).load_state(); });
}

void h5_result(const std::uint8_t* d, std::size_t n, const TargetOptions& opts) {
  const fs::path f = write_input(scratch() / "job.h5", d, n);
  results::ReadOptions ro;
  ro.isolate = opts.isolate;
  // A read that hangs inside libhdf5 (fuzzing found one: H5HG_read looping on a damaged global
  // heap, minutes) is killed after this long and reported as a damaged file. The product waits
  // 60 s (a large healthy file on a slow disk is not a hang); 3 s keeps a campaign's two guarded
  // reads per input inside libFuzzer's -timeout=10 and the corpus replay short.
  ro.isolate_timeout_s = 3;
  expect_clear_errors([&] {
    ro.tables = false;  // what `run` and `status` read
    results::read_job(f.string(), ro);
  });
  expect_clear_errors([&] {
    ro.tables = true;  // what `collect` and `report` read
    const auto job = results::read_job(f.string(), ro);
    results::derive_summary(job);
  });
}

void slurm_text(const std::uint8_t* d, std::size_t n, const TargetOptions&) {
  const std::string t = text(d, n);
  expect_clear_errors([&] { slurm::parse_squeue(t); });
  expect_clear_errors([&] { slurm::parse_scontrol(t); });
  expect_clear_errors([&] { slurm::parse_sacct(t); });
  expect_clear_errors([&] { slurm::parse_max_array_size(t); });
}

}  // namespace

const std::vector<Target>& targets() {
  static const std::vector<Target> all = {
      {"grid", grid},           {"cluster", cluster},       {"job_json", job_json},    {"state", state},
      {"h5_result", h5_result}, {"slurm_text", slurm_text}, {"checkpoint", checkpoint}};
  return all;
}

const Target* find_target(const std::string& name) {
  for (const auto& t : targets())
    if (name == t.name) return &t;
  return nullptr;
}

}  // namespace gridrun::fuzz
