// The planner's model check (issues 45 and 49): before anything is queued or launched, `plan`,
// `run`, `simulate`, `calibrate` and `submit` have gridrun-train build every model=torchscript
// job's model (`gridrun-train --job FILE --count-flops`: the archive check with its limits, the
// load and one trial forward on the job's input) and refuse the grid (exit 2, at its model_file
// line) when it cannot, instead of launching jobs that all fail.
//
// Why a child process: gridrun links no LibTorch (it runs on login nodes), and a hostile file must
// cost the child, not the planner, its memory and time: the child runs under an address-space
// limit (RLIMIT_AS: kModelCheckBaseAddressSpace + 4 x the model file's size; LibTorch alone maps
// about 0.9 GiB on the CPU build, several more with its CUDA libraries) and is killed past
// kModelCheckTimeoutS. Why cached per process: one answer per model content and input serves every
// job that shares them, and `run` takes the FLOPs it counts for the cost model from the same answer.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>

#include "gridrun/jobs/params.hpp"

namespace gridrun::scheduler {

inline constexpr std::uint64_t kModelCheckBaseAddressSpace = std::uint64_t{8} << 30;  // 8 GiB
inline constexpr double kModelCheckTimeoutS = 120;

class ModelChecker {
 public:
  explicit ModelChecker(std::string train_bin) : train_(std::move(train_bin)) {}
  // "" when the job's model builds on its input (or is not a TorchScript model, or gridrun-train
  // cannot be started here: then a warning on stderr, once, and the job is not checked); else one
  // line saying why (gridrun-train's own message, a crash, the memory limit or the timeout).
  std::string check(const jobs::JobParams& job);
  // Forward FLOPs per sample that a passed check counted for this job's model and input, else 0.
  double flops(const jobs::JobParams& job) const;
  // check() as jobs::LoadOptions::check_model_file; the checker must outlive the load.
  std::function<std::string(const jobs::JobParams&)> callback() {
    return [this](const jobs::JobParams& j) { return check(j); };
  }

 private:
  struct Answer {
    std::string problem;
    double flops = 0;
  };
  std::string train_;
  std::map<std::string, Answer> answers_;  // script_cost_key -> answer
  bool warned_ = false;
};

// The process's checker for this gridrun-train (made on first use, kept to the end: its answers
// are the per-process cache).
ModelChecker& model_checker(const std::string& train_bin);

}  // namespace gridrun::scheduler
