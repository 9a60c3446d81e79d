// Where a grid file sets a parameter to a value, for a check made after expansion (issue 58: the
// planner's check of a built-in data set's files, which need the job's dataset and data_dir
// together, reports at the grid's data_dir line as the data_file check does at data_file's).
#pragma once

#include <string>

#include "gridrun/jobs/grid.hpp"

namespace gridrun::jobs {

// A GridError with `message` at the first place the grid file `path`, with opts.overrides, sets
// `key` to a value whose text (jobs::to_string) is `value`: --set, then the grid:/zip:/sample:
// axes, include: entries, defaults:; at the top of the file when none does (the parameter's
// default). The file is read again: call it on the error path only.
GridError error_at_setting(const std::string& path, const LoadOptions& opts, const std::string& key,
                           const std::string& value, const std::string& message);

}  // namespace gridrun::jobs
