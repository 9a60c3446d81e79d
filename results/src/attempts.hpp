// The /attempts table of a job file, for the writer (append at create and resume) and the reader;
// not installed, not a public API.
#pragma once

#include <hdf5.h>

#include <vector>

#include "gridrun/results/format.hpp"

namespace gridrun::results::detail {

// /attempts: one row per start of the runner on a file (columns of one dataset each, so h5py
// reads them as arrays). The datasets are small and fixed-size; appending rewrites the group,
// which is only done before SWMR writing starts (at create and at resume).
void append_attempt(hid_t file, const Attempt& a);
std::vector<Attempt> read_attempts(hid_t file);  // empty when the file has no /attempts

}  // namespace gridrun::results::detail
