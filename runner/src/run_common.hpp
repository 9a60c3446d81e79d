// Private to the runner: the pieces training (trainer.cpp) and inference (inference.cpp) share, so
// both kinds of job pick their device and describe themselves in the results file the same way.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <string>
#include <vector>

#include "gridrun/results/sampler.hpp"
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
                               const results::UtilProbe& probe, std::int64_t resume_step);

// Adds peak_flops and mfu (= flops_per_s / peak of all the job's devices) to a summary that has
// flops_per_s, with the peak chosen as the report's roofline does (results::roof_for). No peak
// known (CPU without a probe file, unknown GPU): nothing is added.
void add_mfu(results::Summary& s, const RunnerOptions& o, const std::string& gpu_name);

}  // namespace gridrun::runner::detail
