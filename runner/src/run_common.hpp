// Private to the runner: the pieces training (trainer.cpp) and inference (inference.cpp) share, so
// both kinds of job pick their device and describe themselves in the results file the same way.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gridrun/results/writer.hpp"
#include "gridrun/runner/communicator.hpp"
#include "gridrun/runner/model.hpp"
#include "gridrun/runner/options.hpp"

namespace gridrun::runner::detail {

// CPU, or this rank's CUDA device (local rank modulo visible devices). Throws BadInput for
// device=gpu without a visible device or on a build without CUDA/NCCL.
torch::Device select_device(const jobs::JobParams& j, Communicator& comm);

// Root attributes of the results file: parameters, hosts, versions, model size and FLOPs.
results::JobFileInfo file_info(const RunnerOptions& o, const Communicator& comm,
                               const std::vector<std::string>& hosts, const Model& model,
                               int gpus, const std::string& gpu_reason,
                               std::int64_t resume_step);

}  // namespace gridrun::runner::detail
