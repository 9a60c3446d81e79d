// What a job's model costs, built as a job builds it (model_cost.cpp): `gridrun-train
// --count-flops`, which the planner's model check runs. The data set options and model spec the
// job's harness builds from the same parameters are here too, so both build the same model.
#pragma once

#include <cstdint>

#include "gridrun/jobs/params.hpp"
#include "gridrun/runner/dataset.hpp"
#include "gridrun/runner/errors.hpp"
#include "gridrun/runner/model.hpp"

namespace gridrun::runner {

// The job's model built on its data set's input, as a job builds it, without a communicator:
// forward FLOPs per sample (counted for model=torchscript) and parameters. gridrun-train
// --count-flops. Throws BadInput as the job would.
struct ModelCost {
  double flops_per_sample = 0;
  std::int64_t params = 0;
};
ModelCost model_cost(const jobs::JobParams& job);

// model_cost could not read the job's data set, so it built no model: --count-flops says so with
// kDataUnreadable before the reason, and the planner's model check leaves the model unchecked
// with a warning instead of refusing it (a built-in set's files may exist only where jobs run).
struct DataUnreadable : BadInput {
  using BadInput::BadInput;
};
inline constexpr const char* kDataUnreadable = "the data set cannot be read here, so no model was built: ";

// The data set a job reads (a TorchScript model takes what the data gives) and the model it
// builds on that data's input.
DatasetOptions dataset_options(const jobs::JobParams& j);
ModelSpec model_spec(const jobs::JobParams& j, const InputInfo& in);

}  // namespace gridrun::runner
