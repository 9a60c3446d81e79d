// Helpers shared by the results library's translation units; not installed, not a public API.
#pragma once

#include <hdf5.h>

#include <string>

#include "gridrun/results/reader.hpp"

namespace gridrun::results::detail {

// Reads a job from an already-open file id (used by the reader and by JobWriter::finish).
JobData read_open_job(hid_t file, const std::string& path, const ReadOptions& opts);

}  // namespace gridrun::results::detail
