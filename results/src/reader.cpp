// Reading job files in any state (finished, live SWMR, left by a killed writer); see reader.hpp.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <sstream>

#include "gridrun/results/reader.hpp"
#include "h5.hpp"
#include "internal.hpp"

namespace gridrun::results {

namespace fs = std::filesystem;
using h5::Id;

std::string to_string(const ParamValue& v) {
  if (auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (auto* i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  if (auto* d = std::get_if<double>(&v)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.10g", *d);
    return buf;
  }
  return std::get<std::string>(v);
}

const std::vector<double>* TableData::column(const std::string& name) const {
  auto it = columns.find(name);
  return it == columns.end() ? nullptr : &it->second;
}

std::string JobData::attr_string(const std::string& name, const std::string& fallback) const {
  auto it = attrs.find(name);
  if (it == attrs.end()) return fallback;
  if (auto* s = std::get_if<std::string>(&it->second)) return *s;
  if (auto* i = std::get_if<std::int64_t>(&it->second)) return std::to_string(*i);
  return to_string(ParamValue(std::get<double>(it->second)));
}

double JobData::attr_number(const std::string& name, double fallback) const {
  auto it = attrs.find(name);
  if (it == attrs.end()) return fallback;
  if (auto* i = std::get_if<std::int64_t>(&it->second)) return static_cast<double>(*i);
  if (auto* d = std::get_if<double>(&it->second)) return *d;
  return fallback;
}

std::map<std::string, ParamValue> parse_params_json(const std::string& json) {
  std::map<std::string, ParamValue> out;
  detail::Json j = detail::parse_json(json, "params");
  if (j.kind != detail::Json::Object) throw std::runtime_error("params: not a JSON object");
  for (const auto& [k, v] : j.obj) {
    switch (v.kind) {
      case detail::Json::Bool: out[k] = v.b; break;
      case detail::Json::Number:
        if (v.is_int) out[k] = v.i;
        else out[k] = v.num;
        break;
      case detail::Json::String: out[k] = v.str; break;
      case detail::Json::Null: out[k] = std::string(); break;
      default: throw std::runtime_error("params: key '" + k + "' is not a scalar");
    }
  }
  return out;
}

namespace detail {

namespace {

void read_table(hid_t file, const std::string& name, TableData& t) {
  if (!h5::exists(file, name)) return;
  Id g = H5_OWN(H5Gopen2(file, name.c_str(), H5P_DEFAULT), H5Gclose);
  hsize_t committed = 0;
  if (h5::exists(g, "rows")) {
    Id rows = H5_OWN(H5Dopen2(g, "rows", H5P_DEFAULT), H5Dclose);
    std::int64_t n = 0;
    H5_CHECK(H5Dread(rows, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &n));
    committed = static_cast<hsize_t>(std::max<std::int64_t>(0, n));
  }
  std::vector<std::string> names;
  for (const auto& n : h5::list_group(g))
    if (n != "rows") names.push_back(n);
  // A column shorter than the counter (never expected) limits every column: rows stay aligned.
  std::vector<Id> ds;
  for (const auto& n : names) {
    ds.push_back(H5_OWN(H5Dopen2(g, n.c_str(), H5P_DEFAULT), H5Dclose));
    committed = std::min(committed, h5::rows_of(ds.back()));
  }
  t.rows = committed;
  for (std::size_t k = 0; k < names.size(); ++k) {
    hsize_t width = h5::width_of(ds[k]);
    std::vector<double> v = h5::read_doubles(ds[k], committed);
    if (width == 0) {
      t.columns[names[k]] = std::move(v);
    } else {
      Matrix m;
      m.rows = committed;
      m.cols = width;
      m.data = std::move(v);
      t.matrices[names[k]] = std::move(m);
    }
  }
}

// `/profile`: columns name, calls, self/total cpu/device microseconds (a missing numeric column
// reads as 0, so a table written by an older or partial profiler still shows).
std::vector<OpProfile> read_profile(hid_t file) {
  std::vector<OpProfile> out;
  if (!h5::exists(file, "profile")) return out;
  Id g = H5_OWN(H5Gopen2(file, "profile", H5P_DEFAULT), H5Gclose);
  if (!h5::exists(g, "name")) return out;
  Id names_ds = H5_OWN(H5Dopen2(g, "name", H5P_DEFAULT), H5Dclose);
  std::vector<std::string> names = h5::read_strings(names_ds);
  auto column = [&](const char* col) {
    std::vector<double> v(names.size(), 0.0);
    if (!h5::exists(g, col)) return v;
    Id ds = H5_OWN(H5Dopen2(g, col, H5P_DEFAULT), H5Dclose);
    std::vector<double> r = h5::read_doubles(ds, std::min<hsize_t>(h5::rows_of(ds), names.size()));
    std::copy(r.begin(), r.end(), v.begin());
    return v;
  };
  std::vector<double> calls = column("calls"), scpu = column("self_cpu_us"),
                      tcpu = column("total_cpu_us"), sdev = column("self_device_us"),
                      tdev = column("total_device_us");
  for (std::size_t k = 0; k < names.size(); ++k)
    out.push_back(OpProfile{names[k], static_cast<std::int64_t>(calls[k]), scpu[k], tcpu[k], sdev[k], tdev[k]});
  return out;
}

}  // namespace

JobData read_open_job(hid_t file, const std::string& path, const ReadOptions& opts) {
  JobData j;
  j.path = path;
  j.partial = path.size() > 8 && path.compare(path.size() - 8, 8, ".partial") == 0;
  for (auto& [k, v] : h5::read_attrs(file)) j.attrs[k] = v;
  if (!j.attrs.count("schema_version") || !j.attrs.count("id"))
    throw std::runtime_error("not a gridrun job file (no schema_version/id attributes)");
  j.schema_version = static_cast<int>(j.attr_number("schema_version", 0));
  j.id = j.attr_string("id");
  j.run = j.attr_string("run");
  j.status = j.attr_string("status");
  j.exit_reason = j.attr_string("exit_reason");
  j.start_time = j.attr_string("start_time");
  j.end_time = j.attr_string("end_time");
  std::string params = j.attr_string("params");
  if (!params.empty()) j.params = parse_params_json(params);
  if (opts.tables) {
    read_table(file, "steps", j.steps);
    read_table(file, "epochs", j.epochs);
    read_table(file, "util", j.util);
    j.profile = read_profile(file);
  }
  if (h5::exists(file, "util")) {
    Id g = H5_OWN(H5Gopen2(file, "util", H5P_DEFAULT), H5Gclose);
    for (auto& [k, v] : h5::read_attrs(g))
      if (k == "gpu_absent_reason" && std::holds_alternative<std::string>(v))
        j.gpu_absent_reason = std::get<std::string>(v);
  }
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

JobData read_job(const std::string& path, const ReadOptions& opts) {
  if (!fs::exists(path)) throw std::runtime_error(path + ": no such file");
  h5::Quiet quiet;
  try {
    Id file = open_for_read(path);
    return detail::read_open_job(file, path, opts);
  } catch (const std::exception& e) {
    throw std::runtime_error(path + ": " + e.what());
  }
}

std::string job_status(const std::string& path) {
  try {
    if (!fs::exists(path)) return "";
    ReadOptions o;
    o.tables = false;
    return read_job(path, o).status;
  } catch (...) {
    return "";
  }
}

}  // namespace gridrun::results
