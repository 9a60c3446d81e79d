// Private to the data set readers: the in-memory split every reader builds, and the HDF5 reader
// (dataset_hdf5.cpp), which lives in its own file because it is the one reader that may stream.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <vector>

#include "gridrun/runner/dataset.hpp"

namespace gridrun::runner::detail {

// Inputs [N, ...] (uint8 images, normalised per batch as (x / 255 - mean[c]) / std[c] when mean is
// given; float images or int64 tokens as they are), labels int64 [N].
std::shared_ptr<Dataset> tensor_dataset(at::Tensor x, at::Tensor y, const std::vector<float>& mean = {},
                                        const std::vector<float>& stdev = {});

// dataset=hdf5.
DataSplits make_hdf5(const DatasetOptions& o);

}  // namespace gridrun::runner::detail
