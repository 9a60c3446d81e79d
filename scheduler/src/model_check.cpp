// See model_check.hpp. One gridrun-train --count-flops per model content and input, through
// base::run_captured with an address-space limit and a timeout.
#include "gridrun/scheduler/model_check.hpp"

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <memory>

#include "gridrun/base/spawn.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/jobs/job.hpp"
#include "gridrun/scheduler/simulate.hpp"

namespace fs = std::filesystem;

namespace gridrun::scheduler {

namespace {

// AddressSanitizer reserves terabytes of address space for its shadow memory: a sanitized
// gridrun-train cannot start under any RLIMIT_AS, so the sanitizer lanes check without one.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kSanitized = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kSanitized = true;
#else
constexpr bool kSanitized = false;
#endif
#else
constexpr bool kSanitized = false;
#endif

// gridrun-train's one line ("gridrun-train: model_file PATH: forward returned ..."), as the grid's
// model_file key will show it: "PATH: forward returned ...". LibTorch may print warnings first.
std::string reason_of(const std::string& err) {
  std::string line, last;
  for (std::size_t at = 0; at < err.size();) {
    std::size_t nl = err.find('\n', at);
    if (nl == std::string::npos) nl = err.size();
    const std::string l = err.substr(at, nl - at);
    if (!l.empty()) last = l;
    if (l.rfind("gridrun-train: ", 0) == 0) line = l;
    at = nl + 1;
  }
  if (line.empty()) line = last;
  for (const char* prefix : {"gridrun-train: ", "runtime failure: ", "model_file "})
    if (line.rfind(prefix, 0) == 0) line = line.substr(std::char_traits<char>::length(prefix));
  return base::printable_line(line);
}

// What gridrun-train --count-flops says before the reason when it could not read the job's data
// set and so built no model (runner::kDataUnreadable, runner/src/model_cost.hpp).
constexpr const char* kDataUnreadable = "the data set cannot be read here, so no model was built: ";

std::string gib(std::uint64_t bytes) {
  return std::to_string((bytes + (std::uint64_t{1} << 30) - 1) >> 30) + " GiB";
}

}  // namespace

double ModelChecker::flops(const jobs::JobParams& job) const {
  const auto it = answers_.find(script_cost_key(job));
  return it == answers_.end() ? 0 : it->second.flops;
}

std::string ModelChecker::check(const jobs::JobParams& job) {
  if (jobs::model_kind(job) != jobs::ModelKind::file || job.model_file.empty()) return "";
  const std::string key = script_cost_key(job);
  if (const auto it = answers_.find(key); it != answers_.end()) return it->second.problem;
  std::string dir = (fs::temp_directory_path() / "gridrun-model-check-XXXXXX").string();
  if (!::mkdtemp(dir.data()))
    throw std::runtime_error("model check: cannot make a temporary folder in " +
                             fs::temp_directory_path().string());
  struct Remove {
    std::string path;
    ~Remove() {
      std::error_code ec;
      fs::remove_all(path, ec);
    }
  } remove{dir};
  const std::string file = dir + "/job.json";
  jobs::write_job_file(file, jobs::make_job("model-check", 0, job));
  std::error_code ec;
  const auto size = fs::file_size(job.model_file, ec);
  base::CaptureOptions co;
  co.timeout_s = kModelCheckTimeoutS;
  co.max_address_space = kSanitized ? 0 : kModelCheckBaseAddressSpace + 4 * (ec ? 0 : size);
  // One thread, no GPU: the check builds the model on the CPU, as the job's rank 0 does first.
  co.env_set = {"OMP_NUM_THREADS=1", "CUDA_VISIBLE_DEVICES="};
  const base::CapturedRun r = base::run_captured({train_, "--job", file, "--count-flops"}, co);
  Answer a;
  if (!r.started) {
    if (!warned_)
      std::cerr << "warning: model_file not checked before launch: " << train_ << " cannot start here ("
                << base::printable_line(r.err) << ")\n";
    warned_ = true;
    return answers_.emplace(key, a).first->second.problem;
  }
  const auto at = r.out.find("flops_per_sample ");
  if (r.timed_out) {
    a.problem = job.model_file + ": building the model and one trial forward took longer than " +
                std::to_string(static_cast<int>(kModelCheckTimeoutS)) + " s (gridrun-train --count-flops)";
  } else if (r.exit_code == 0 && at != std::string::npos) {
    a.flops = std::strtod(r.out.c_str() + at + 17, nullptr);
  } else if (r.exit_code > 128) {
    a.problem = job.model_file + ": gridrun-train ended by signal " + std::to_string(r.exit_code - 128) +
                " while building the model (gridrun-train --job JOB --count-flops repeats it)";
  } else if (const std::string why = reason_of(r.err); why.rfind(kDataUnreadable, 0) == 0) {
    // A built-in set's files may exist only where the jobs run (an HDF5 data_file was checked
    // before this, at its own key): the model is not checked, and the job reports its data.
    std::cerr << "warning: " << job.model_file << ": model not checked before launch: " << why << "\n";
  } else {
    a.problem = why;
    if (a.problem.empty())
      a.problem = job.model_file + ": gridrun-train --count-flops exited " + std::to_string(r.exit_code) +
                  " without a message";
    if (co.max_address_space > 0 && r.err.find("alloc") != std::string::npos)
      a.problem += " (the check runs within " + gib(co.max_address_space) + " of address space)";
  }
  return answers_.emplace(key, a).first->second.problem;
}

ModelChecker& model_checker(const std::string& train_bin) {
  // Never freed: the answers are the process's cache, and a checker is reached by reference.
  static auto* checkers = new std::map<std::string, std::unique_ptr<ModelChecker>>;
  auto& c = (*checkers)[train_bin];
  if (!c) c = std::make_unique<ModelChecker>(train_bin);
  return *c;
}

}  // namespace gridrun::scheduler
