// read_job and job_glance (see reader.hpp): one file through the run reader's guarded read
// (run_reader.cpp); the read itself, in whatever process, is reading.cpp.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <set>

#include "gridrun/base/json.hpp"
#include "gridrun/base/spawn.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/results/reader.hpp"
#include "gridrun/results/run_reader.hpp"
#include "reading.hpp"

namespace gridrun::results {

namespace fs = std::filesystem;

namespace {
// One file through the run reader, without the folder's index (a caller of read_job or job_glance
// reads one file of its own, not a run).
JobFileRead read_one(const std::string& path, Depth depth, double timeout_s) {
  FolderReadOptions fo;
  fo.depth = depth;
  fo.use_index = false;
  fo.item_timeout_s = timeout_s;
  auto got = read_job_files(fs::path(path).parent_path().string(), {fs::path(path).filename().string()}, fo);
  return std::move(got[0]);
}
}  // namespace

JobData read_job(const std::string& path, const ReadOptions& opts) {
  if (!fs::exists(path)) throw std::runtime_error(path + ": no such file");
  try {
    if (!opts.isolate) return detail::read_job_here(path, opts);
    // One read, in a forked copy that hands the decoded record back (a crash costs the copy only).
    JobFileRead got = read_one(path, opts.tables ? Depth::Full : Depth::Summary, opts.isolate_timeout_s);
    if (!got.ok) throw std::runtime_error(got.error);
    return std::move(got.data);
  } catch (const std::exception& e) {
    const std::string w = e.what();
    throw std::runtime_error(w.rfind(path + ": ", 0) == 0 ? w : path + ": " + w);
  }
}

std::string job_status(const std::string& path) { return job_glance(path).status; }

JobGlance job_glance(const std::string& path) {
  JobGlance g;
  try {
    if (!fs::exists(path)) return g;
    JobFileRead got = read_one(path, Depth::Glance, ReadOptions{}.isolate_timeout_s);
    if (!got.ok) return g;
    g.status = std::move(got.data.status);
    g.attempts = std::move(got.data.attempts);
  } catch (...) {
    return JobGlance{};
  }
  return g;
}

}  // namespace gridrun::results
