// See builtin_files.hpp.
#include "gridrun/dataset/builtin_files.hpp"

#include <filesystem>
#include <vector>

#include "gridrun/base/text.hpp"
#include "gridrun/jobs/setting_at.hpp"

namespace gridrun::dataset {

namespace {

namespace fs = std::filesystem;

// The files a data set reads, each given as its alternatives (MNIST's raw or .gz).
std::vector<std::vector<std::string>> files_of(const std::string& name) {
  if (name == "cifar10")
    return {{"data_batch_1.bin"}, {"data_batch_2.bin"}, {"data_batch_3.bin"},
            {"data_batch_4.bin"}, {"data_batch_5.bin"}, {"test_batch.bin"}};
  if (name == "mnist" || name == "fashion-mnist") {
    std::vector<std::vector<std::string>> out;
    for (const char* f : {"train-images-idx3-ubyte", "train-labels-idx1-ubyte", "t10k-images-idx3-ubyte",
                          "t10k-labels-idx1-ubyte"})
      out.push_back({f, std::string(f) + ".gz"});
    return out;
  }
  if (name == "text") return {{"train.tsv"}, {"test.tsv"}};
  return {};
}

}  // namespace

std::string check_builtin_files(const std::string& name, const std::string& data_dir) {
  const auto files = files_of(name);
  if (files.empty()) return "";
  const std::string dir = data_dir.empty() && name == "fashion-mnist" ? kFashionMnistDir : data_dir;
  std::vector<std::string> missing;
  for (const auto& alternatives : files) {
    bool found = false;
    for (const auto& f : alternatives) {
      std::error_code ec;
      found = found || fs::is_regular_file(fs::path(dir) / f, ec);
    }
    if (!found) missing.push_back(alternatives.front() + (alternatives.size() > 1 ? "[.gz]" : ""));
  }
  if (missing.empty()) return "";
  std::error_code ec;
  const std::string where = fs::is_directory(dir, ec) ? "'" + dir + "'" : "'" + dir + "' (no such folder)";
  std::string line = "dataset=" + name + " reads " +
                     base::counted("file", static_cast<long long>(files.size())) + " from data_dir " + where +
                     "; missing: " + base::join(missing, ", ");
  if (name == "fashion-mnist" && data_dir.empty()) line += " (install Debian package dataset-fashion-mnist)";
  if (name == "cifar10") line += " (CIFAR-10's binary version, cifar-10-batches-bin)";
  return line;
}

void check_builtin_data(const std::string& grid, const jobs::LoadOptions& opts,
                        const std::set<std::pair<std::string, std::string>>& used) {
  for (const auto& [name, dir] : used)
    if (const std::string problem = check_builtin_files(name, dir); !problem.empty())
      throw dir.empty() ? jobs::error_at_setting(grid, opts, "dataset", name, problem)
                        : jobs::error_at_setting(grid, opts, "data_dir", dir, problem);
}

}  // namespace gridrun::dataset
