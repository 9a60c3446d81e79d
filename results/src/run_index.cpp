// The run index file: records -> RUN_DIR/results.h5 (/jobs table + /links external links), and
// the inverse (read_index) used by `gridrun report`. `gridrun collect` (report/collect.cpp) decides
// what goes in.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <set>
#include <stdexcept>

#include "columns.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/spawn.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/h5/h5.hpp"
#include "gridrun/results/run_index.hpp"
#include "job_codec.hpp"
#include "reading.hpp"

namespace gridrun::results {

namespace gj = gridrun::jobs;

namespace fs = std::filesystem;
using h5::Id;

JobRecord record_of(const JobData& job, const std::string& relative_file) {
  JobRecord r;
  r.id = job.id;
  r.status = job.status;
  r.exit_reason = job.exit_reason;
  r.file = relative_file;
  r.params = job.params;
  // A finished file carries its summary; a running or killed one gets it derived from its rows.
  r.summary = job.summary.empty() ? derive_summary(job) : job.summary;
  return r;
}

JobRecord record_of(JobData&& job, const std::string& relative_file) {
  JobRecord r;
  if (job.summary.empty()) job.summary = derive_summary(job);
  r.id = std::move(job.id);
  r.status = std::move(job.status);
  r.exit_reason = std::move(job.exit_reason);
  r.file = relative_file;
  r.params = std::move(job.params);
  r.summary = std::move(job.summary);
  return r;
}

namespace {

// The fixed string columns of the index's /jobs (parameters and figures are columns by name).
const detail::Columns<JobRecord>& index_columns() {
  static const detail::Columns<JobRecord> c = {
      {"id", &JobRecord::id},
      {"status", &JobRecord::status},
      {"exit_reason", &JobRecord::exit_reason},
      {"file", &JobRecord::file},
  };
  return c;
}

// A parameter's index column: its table type, except that an integer or bool column becomes
// float (NaN = none) when some job has no parameters.
enum class Kind { Bool, Int, Float, String };

Kind column_kind(const gj::ParamSpec& spec, bool every_job_has_params) {
  if (spec.type == gj::Type::String) return Kind::String;
  if (spec.type == gj::Type::Float || !every_job_has_params) return Kind::Float;
  return spec.type == gj::Type::Bool ? Kind::Bool : Kind::Int;
}

double as_double(const ParamValue& v) {
  if (auto* b = std::get_if<bool>(&v)) return *b ? 1 : 0;
  if (auto* i = std::get_if<std::int64_t>(&v)) return static_cast<double>(*i);
  if (auto* d = std::get_if<double>(&v)) return *d;
  return std::nan("");
}

// The index file's bytes: made in memory (h5.hpp: a full disk is then write_file_atomic's error).
std::string index_image(const std::string& run_dir, const std::vector<JobRecord>& jobs) {
  Id file = h5::create_in_memory(false);
  h5::write_attr(file, "run",
                 fs::path(run_dir).lexically_normal().filename().string().empty()
                     ? fs::absolute(run_dir).lexically_normal().parent_path().filename().string()
                     : fs::path(run_dir).lexically_normal().filename().string());
  h5::write_attr(file, "schema_version", static_cast<std::int64_t>(kSchemaVersion));
  h5::write_attr(file, "gridrun_version", std::string(GRIDRUN_VERSION));
  h5::write_attr(file, "created", base::iso_now());
  h5::write_attr(file, "jobs", static_cast<std::int64_t>(jobs.size()));

  Id g = H5_OWN(H5Gcreate2(file, "jobs", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  detail::write_whole_table(g, index_columns(), jobs, detail::Strings::Variable);
  // Column by column, each job's values taken in one sequential pass (its parameters in table
  // order, its summary map in name order): looking every job up by name for each of ~60 columns
  // went through 100,000 scattered maps 60 times and grew faster than the run (issue 60).
  const std::vector<gj::ParamSpec>& table = gj::param_table();
  bool any_params = false, all_params = true;
  std::set<std::string> summary_set;
  for (const auto& j : jobs) {
    any_params = any_params || j.params.has_value();
    all_params = all_params && j.params.has_value();
    for (const auto& kv : j.summary) summary_set.insert(kv.first);
  }
  // One column per parameter of the table, in name order (none when no job has parameters).
  std::vector<std::size_t> order;  // indices into `table`, by name
  if (any_params) {
    for (std::size_t i = 0; i < table.size(); ++i) order.push_back(i);
    std::sort(order.begin(), order.end(),
              [&](std::size_t a, std::size_t b) { return table[a].name < table[b].name; });
  }
  // Each job's values taken once into per-column arrays (8 bytes a number): holding every job's
  // value list at once cost 2 KB a job, the largest part of collect's memory at 100,000 jobs.
  struct Column {
    Kind kind = Kind::Float;
    std::vector<std::string> strings;
    std::vector<double> numbers;  // ints and bools too, written back as integers
  };
  std::vector<Column> cols(table.size());
  for (const std::size_t i : order) {
    cols[i].kind = column_kind(table[i], all_params);
    if (cols[i].kind == Kind::String)
      cols[i].strings.reserve(jobs.size());
    else
      cols[i].numbers.reserve(jobs.size());
  }
  if (any_params)
    for (const auto& j : jobs) {
      const std::vector<gj::Value> v = j.params ? gj::param_values(*j.params) : std::vector<gj::Value>{};
      for (const std::size_t i : order) {
        if (cols[i].kind == Kind::String)
          cols[i].strings.push_back(v.empty() ? "" : to_string(v[i]));
        else
          cols[i].numbers.push_back(v.empty() ? std::nan("") : as_double(v[i]));
      }
    }
  Id pg = H5_OWN(H5Gcreate2(g, "params", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  for (const std::size_t i : order) {
    Column& col = cols[i];
    const std::string& key = table[i].name;
    if (col.kind == Kind::String) {
      h5::write_strings(pg, key, col.strings);
    } else if (col.kind == Kind::Float) {
      h5::write_doubles(pg, key, col.numbers);
    } else {
      std::vector<std::int64_t> ints(col.numbers.begin(), col.numbers.end());
      h5::write_int64s(pg, key, ints);
      if (col.kind == Kind::Bool) {
        Id ds = H5_OWN(H5Dopen2(pg, key.c_str(), H5P_DEFAULT), H5Dclose);
        h5::write_attr(ds, "type", std::string("bool"));
      }
    }
    col = Column{};  // freed as written
  }
  // The summary columns filled job by job: each job's sorted map walked beside the sorted names.
  const std::vector<std::string> summary_keys(summary_set.begin(), summary_set.end());
  std::vector<std::vector<double>> summary_cols(summary_keys.size(),
                                                std::vector<double>(jobs.size(), std::nan("")));
  for (std::size_t k = 0; k < jobs.size(); ++k) {
    std::size_t c = 0;
    for (const auto& [name, v] : jobs[k].summary) {
      while (summary_keys[c] != name) ++c;  // every name of a job is among the sorted names
      summary_cols[c][k] = v;
    }
  }
  Id sg = H5_OWN(H5Gcreate2(g, "summary", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  for (std::size_t c = 0; c < summary_keys.size(); ++c)
    h5::write_doubles(sg, summary_keys[c], summary_cols[c]);
  // External links resolve relative to the index file's folder, so the run dir can be moved.
  Id lg = H5_OWN(H5Gcreate2(file, "links", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  for (const auto& j : jobs)
    H5_CHECK(H5Lcreate_external(j.file.c_str(), "/", lg, j.id.c_str(), H5P_DEFAULT, H5P_DEFAULT));
  lg.reset();
  sg.reset();
  pg.reset();
  g.reset();
  return h5::file_image(file);
}

}  // namespace

namespace {
// The reading itself (read_index runs it in a forked copy first).
std::vector<JobRecord> read_index_here(const std::string& results_h5) {
  Id file = H5_OWN(H5Fopen(results_h5.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  if (!h5::exists(file, "jobs/id")) throw std::runtime_error("not a gridrun results.h5 (no /jobs/id)");
  Id g = H5_OWN(H5Gopen2(file, "jobs", H5P_DEFAULT), H5Gclose);
  std::vector<JobRecord> out = detail::read_whole_table(g, index_columns());
  Id pg = H5_OWN(H5Gopen2(g, "params", H5P_DEFAULT), H5Gclose);
  // Columns of parameters this version does not know (an index written by a newer gridrun)
  // are left out; a job with no value in any column has no parameters.
  std::vector<bool> seen(out.size(), false);
  std::vector<gj::JobParams> params(out.size());
  for (const auto& key : h5::list_group(pg)) {
    const gj::ParamSpec* spec = gj::find_param(key);
    if (!spec) continue;
    Id ds = H5_OWN(H5Dopen2(pg, key.c_str(), H5P_DEFAULT), H5Dclose);
    Id type = H5_OWN(H5Dget_type(ds), H5Tclose);
    if (H5Tget_class(type) == H5T_STRING) {
      auto v = h5::read_strings(ds);
      for (std::size_t k = 0; k < out.size() && k < v.size(); ++k) {
        if (v[k].empty() && spec->type != gj::Type::String) continue;
        gj::set_param(params[k], key, v[k]);
        seen[k] = seen[k] || !v[k].empty();
      }
    } else {
      auto v = h5::read_doubles(ds, out.size());
      for (std::size_t k = 0; k < out.size() && k < v.size(); ++k) {
        if (std::isnan(v[k])) continue;
        seen[k] = true;
        if (spec->type == gj::Type::Bool)
          gj::set_param(params[k], key, v[k] != 0);
        else if (spec->type == gj::Type::Int)
          gj::set_param(params[k], key, static_cast<std::int64_t>(v[k]));
        else
          gj::set_param(params[k], key, v[k]);
      }
    }
  }
  for (std::size_t k = 0; k < out.size(); ++k)
    if (seen[k]) out[k].params = std::move(params[k]);
  Id sg = H5_OWN(H5Gopen2(g, "summary", H5P_DEFAULT), H5Gclose);
  for (const auto& key : h5::list_group(sg)) {
    Id ds = H5_OWN(H5Dopen2(sg, key.c_str(), H5P_DEFAULT), H5Dclose);
    auto v = h5::read_doubles(ds, out.size());
    for (std::size_t k = 0; k < out.size() && k < v.size(); ++k) out[k].summary[key] = v[k];
  }
  return out;
}
}  // namespace

namespace {
// The records as bytes, for the trip from the forked copy that read them (job_codec.hpp's helpers).
std::string encode_records(const std::vector<JobRecord>& records) {
  detail::ByteWriter w;
  w.u64(records.size());
  for (const auto& r : records) {
    for (const std::string* s : {&r.id, &r.status, &r.exit_reason, &r.file}) w.str(*s);
    w.str(r.params ? gj::canonical_json(*r.params) : std::string());
    w.u64(r.summary.size());
    for (const auto& [k, v] : r.summary) {
      w.str(k);
      w.f64(v);
    }
  }
  return std::move(w.bytes());
}

std::vector<JobRecord> decode_records(std::string_view bytes) {
  detail::ByteReader in(bytes);
  std::vector<JobRecord> out(in.count(48));
  for (auto& r : out) {
    for (std::string* s : {&r.id, &r.status, &r.exit_reason, &r.file}) *s = in.str();
    const std::string params = in.str();
    if (!params.empty()) r.params = gj::job_params_from_json(params);
    for (std::size_t n = in.count(16); n > 0; --n) {
      std::string k = in.str();
      r.summary[k] = in.f64();
    }
  }
  return out;
}
}  // namespace

std::vector<JobRecord> read_index(const std::string& results_h5, double timeout_s) {
  try {
    if (!fs::exists(results_h5)) throw std::runtime_error("no such file");
    // As the job files: read once, in a forked copy that hands the records back, so that a damaged
    // index that crashes libhdf5 costs only the copy.
    const auto got = base::run_isolated_each(
        1,
        [&](std::size_t) {
          h5::Quiet quiet;
          return encode_records(read_index_here(results_h5));
        },
        timeout_s);
    if (!got[0].ok) throw std::runtime_error(detail::guarded_read_failure(got[0]));
    return decode_records(got[0].message);
  } catch (const std::exception& e) {
    throw std::runtime_error(results_h5 + ": " + e.what());
  }
}

void write_run_index(const std::string& path, const std::string& run_dir,
                     const std::vector<JobRecord>& jobs) {
  std::string bytes;
  {
    h5::Quiet quiet;
    try {
      bytes = index_image(run_dir, jobs);
    } catch (const std::exception& e) {
      throw std::runtime_error(path + ": " + e.what());
    }
  }
  base::write_file_atomic(path, bytes);  // its error names the path and errno (ENOSPC: exit 1)
}

}  // namespace gridrun::results
