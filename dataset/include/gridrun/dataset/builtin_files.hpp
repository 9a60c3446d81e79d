// The files of the built-in data sets (cifar10, mnist, fashion-mnist, text), as gridrun-train
// opens them (runner/src/datasets.cpp), checked by the planner before anything is launched (issue
// 58: `dataset: cifar10` with a data_dir that held no data set failed 2.7 s into the run, where a
// missing data_file is refused at plan).
#pragma once

#include <set>
#include <string>
#include <utility>

#include "gridrun/jobs/grid.hpp"

namespace gridrun::dataset {

// Where Debian 12's dataset-fashion-mnist installs its files: fashion-mnist's data_dir when none is given.
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";

// "" when every file data set `name` reads from `data_dir` is a readable file (or `name` reads no
// files: synthetic, hdf5), else one line naming the folder and the files missing.
std::string check_builtin_files(const std::string& name, const std::string& data_dir);

// Every (dataset, data_dir) pair of a grid's jobs checked with check_builtin_files; the first one
// missing files throws jobs::GridError at the grid's data_dir (its dataset when data_dir is not
// set) that gives it (jobs::error_at_setting). `grid` and `opts`: as the grid was loaded.
void check_builtin_data(const std::string& grid, const jobs::LoadOptions& opts,
                        const std::set<std::pair<std::string, std::string>>& used);

}  // namespace gridrun::dataset
