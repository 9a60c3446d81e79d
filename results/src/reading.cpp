// Reading a job file in this process (see reading.hpp): open it in whatever state it is
// (finished, live SWMR, left by a killed writer), read its tables through their descriptor lists
// (columns.hpp), and the one wording of a guarded read that failed. The guarded read itself, in a
// forked copy, is the run reader's (run_reader.cpp); read_job goes through it.
#include "reading.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>

#include "attempts.hpp"
#include "columns.hpp"
#include "gridrun/base/json.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/h5/h5.hpp"

namespace gridrun::results {

namespace fs = std::filesystem;
using h5::Id;

namespace detail {

namespace {

// One of /steps, /epochs, /util: the columns of its descriptor list that the file has (per-GPU
// columns only in GPU jobs' files), cut to the committed-rows counter.
template <class Row>
void read_table(hid_t file, const std::string& name, const Columns<Row>& cols, TableData& t) {
  if (!h5::exists(file, name)) return;
  Id g = H5_OWN(H5Gopen2(file, name.c_str(), H5P_DEFAULT), H5Gclose);
  hsize_t committed = 0;
  if (h5::exists(g, "rows")) {
    Id rows = H5_OWN(H5Dopen2(g, "rows", H5P_DEFAULT), H5Dclose);
    std::int64_t n = 0;
    H5_CHECK(H5Dread(rows, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &n));
    committed = static_cast<hsize_t>(std::max<std::int64_t>(0, n));
  }
  std::vector<std::pair<std::string, Id>> present;
  for (const auto& c : cols)
    if (h5::exists(g, c.name))
      present.emplace_back(c.name, H5_OWN(H5Dopen2(g, c.name, H5P_DEFAULT), H5Dclose));
  // A column shorter than the counter (never expected) limits every column: rows stay aligned.
  for (const auto& [n, ds] : present) committed = std::min(committed, h5::rows_of(ds));
  t.rows = committed;
  for (const auto& [n, ds] : present) {
    hsize_t width = h5::width_of(ds);
    std::vector<double> v = h5::read_doubles(ds, committed);
    if (width == 0) {
      t.columns[n] = std::move(v);
    } else {
      Matrix m;
      m.rows = committed;
      m.cols = width;
      m.data = std::move(v);
      t.matrices[n] = std::move(m);
    }
  }
}

// The root attributes that JobData carries as its own string members.
constexpr std::pair<const char*, std::string JobData::*> kStringAttrs[] = {
    {"id", &JobData::id},
    {"run", &JobData::run},
    {"status", &JobData::status},
    {"exit_reason", &JobData::exit_reason},
    {"start_time", &JobData::start_time},
    {"end_time", &JobData::end_time}};

// `/profile` (a missing numeric column reads as 0, so a table written by an older or partial
// profiler still shows).
std::vector<OpProfile> read_profile(hid_t file) {
  if (!h5::exists(file, "profile")) return {};
  Id g = H5_OWN(H5Gopen2(file, "profile", H5P_DEFAULT), H5Gclose);
  return read_whole_table(g, profile_columns());
}

}  // namespace

JobData read_open_job(hid_t file, const std::string& path, const ReadOptions& opts) {
  JobData j;
  j.path = path;
  j.depth = opts.tables ? Depth::Full : Depth::Summary;
  j.partial = base::ends_with(path, ".partial");
  for (auto& [k, v] : h5::read_attrs(file)) j.attrs[k] = v;
  if (!j.attrs.count("schema_version") || !j.attrs.count("id"))
    throw std::runtime_error("not a gridrun job file (no schema_version/id attributes)");
  j.schema_version = static_cast<int>(j.attr_number("schema_version", 0));
  for (const auto& [name, member] : kStringAttrs) j.*member = j.attr_string(name);
  std::string params = j.attr_string("params");
  if (!params.empty()) {
    try {
      j.params = jobs::job_params_from_json(params);
    } catch (const std::exception& e) {
      throw std::runtime_error(std::string("attribute ") + e.what());
    }
    // The typed parameters carry what `params` and the ~60 `param.<name>` attributes (written for
    // h5py users) say again: kept, they were most of a job's attributes, of its record in the
    // folder's index and of a report's memory at 100,000 jobs (docs/architecture.md). A file
    // without `params` (older writers) keeps them: param_number reads them there.
    j.attrs.erase_if(
        [](const auto& kv) { return kv.first == "params" || base::starts_with(kv.first, "param."); });
  }
  if (opts.tables) {
    read_table(file, "steps", step_columns(), j.steps);
    read_table(file, "epochs", epoch_columns(), j.epochs);
    read_table(file, "util", util_columns(), j.util);
    j.profile = read_profile(file);
  }
  if (h5::exists(file, "util")) {
    Id g = H5_OWN(H5Gopen2(file, "util", H5P_DEFAULT), H5Gclose);
    for (auto& [k, v] : h5::read_attrs(g))
      if (k == "gpu_absent_reason" && std::holds_alternative<std::string>(v))
        j.gpu_absent_reason = std::get<std::string>(v);
  }
  j.attempts = read_attempts(file);
  if (h5::exists(file, "summary")) {
    Id g = H5_OWN(H5Gopen2(file, "summary", H5P_DEFAULT), H5Gclose);
    for (const auto& n : h5::list_group(g)) {
      Id ds = H5_OWN(H5Dopen2(g, n.c_str(), H5P_DEFAULT), H5Dclose);
      auto v = h5::read_doubles(ds, 1);
      if (!v.empty()) j.summary[n] = v[0];
    }
  }
  return j;
}

}  // namespace detail

namespace {

// Opens for reading: plain, else SWMR-read (live writer or a killed SWMR writer), else a private
// copy whose "open for writing" superblock flags are cleared. The copy is unlinked once open.
Id open_for_read(const std::string& path) {
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f >= 0) return Id(f, H5Fclose);
  std::string first_error = h5::last_error_message();
  H5Eclear2(H5E_DEFAULT);
  f = H5Fopen(path.c_str(), H5F_ACC_RDONLY | H5F_ACC_SWMR_READ, H5P_DEFAULT);
  if (f >= 0) return Id(f, H5Fclose);
  H5Eclear2(H5E_DEFAULT);
  // Only worth copying if it is an HDF5 file at all.
  if (H5Fis_hdf5(path.c_str()) <= 0) {
    H5Eclear2(H5E_DEFAULT);
    throw std::runtime_error("not an HDF5 file or truncated (" + first_error + ")");
  }
  std::string tmpl = (fs::temp_directory_path() / "gridrun-read-XXXXXX").string();
  int fd = mkstemp(tmpl.data());
  if (fd < 0) throw std::runtime_error("cannot create a temporary copy");
  close(fd);
  std::error_code ec;
  fs::copy_file(path, tmpl, fs::copy_options::overwrite_existing, ec);
  if (ec) {
    fs::remove(tmpl, ec);
    throw std::runtime_error("cannot copy for reading: " + ec.message());
  }
  Id fapl = h5::latest_fapl();
  hbool_t clear = 1;
  H5_CHECK(H5Pset(fapl, "clear_status_flags", &clear));
  f = H5Fopen(tmpl.c_str(), H5F_ACC_RDWR, fapl);
  if (f >= 0) {
    H5Fclose(f);
    f = H5Fopen(tmpl.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  }
  std::string err = h5::last_error_message();
  H5Eclear2(H5E_DEFAULT);
  fs::remove(tmpl, ec);
  if (f < 0) throw std::runtime_error("unreadable HDF5 file (" + (err.empty() ? first_error : err) + ")");
  return Id(f, H5Fclose);
}

}  // namespace

namespace detail {
JobData read_job_here(const std::string& path, const ReadOptions& opts) {
  h5::Quiet quiet;
  Id file = open_for_read(path);
  return read_open_job(file, path, opts);
}
}  // namespace detail

std::string detail::guarded_read_failure(const base::IsolatedRun& got) {
  if (got.no_answer) return "damaged: reading it " + got.message + " inside libhdf5";
  std::string s = got.message;
  for (char& c : s)
    if (c == '\n' || c == '\r') c = ' ';
  // A chunk whose Fletcher32 checksum fails (h5.hpp): stored numbers changed since written.
  if (s.find("Fletcher32 checksum") != std::string::npos)
    return "damaged: a stored number fails its checksum (" + s + ")";
  return s;
}

}  // namespace gridrun::results
