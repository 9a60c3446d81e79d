#pragma once
// --init-out: initial weights as HDF5 (see runner/src/init_export.cpp and docs/runner.md).
#include <ATen/ATen.h>

#include <string>
#include <utility>
#include <vector>

namespace gridrun::runner {

// One float32 dataset per entry, named as given. Throws std::runtime_error.
void write_init_weights(const std::string& path,
                        const std::vector<std::pair<std::string, at::Tensor>>& named);

}  // namespace gridrun::runner
