// Helpers shared by the results library's translation units; not installed, not a public API.
#pragma once

#include <hdf5.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "gridrun/results/reader.hpp"

namespace gridrun::results::detail {

std::string trim(const std::string& s);
std::string iso_now();      // current UTC time, ISO 8601 ("2024-05-01T12:00:00Z")
std::string cpu_model();    // /proc/cpuinfo "model name", or "unknown"
std::string hostname();     // gethostname, or "unknown"

// Reads a job from an already-open file id (used by the reader and by JobWriter::finish).
JobData read_open_job(hid_t file, const std::string& path, const ReadOptions& opts);

// A small JSON value: enough for the `params` attribute and the scheduler's state.json.
struct Json {
  enum Kind { Null, Bool, Number, String, Array, Object } kind = Null;
  bool b = false;
  double num = 0;
  bool is_int = false;                 // number written without '.', 'e' or 'E'
  std::int64_t i = 0;
  std::string str;
  std::vector<Json> arr;
  std::vector<std::pair<std::string, Json>> obj;  // in file order
  const Json* get(const std::string& key) const;
};
// Throws std::runtime_error("<what>: JSON error at offset N: ...").
Json parse_json(const std::string& text, const std::string& what);
std::string json_escape(const std::string& s);

}  // namespace gridrun::results::detail
