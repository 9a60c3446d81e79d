// Conversions between scalar text and typed parameter values, shared by the grid loader, the job
// file reader and CLI overrides (not installed). Why shared: a value must be accepted or refused
// identically whether it comes from a grid, a job file or `gridrun-train --lr`.
// The private half of gridrun/jobs/params.hpp: everything here is defined in params.cpp, so it
// carries that component's name (a header of another name would make params.cpp and it include
// each other, a cycle that tests/arch/check_layers.py refuses).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "gridrun/base/json.hpp"
#include "gridrun/jobs/params.hpp"

namespace gridrun::jobs::detail {

// Text -> Value of the spec's type. On failure returns false and sets `err` to a message such as
// "expected an integer, got 'abc'".
bool text_to_value(const ParamSpec& spec, const std::string& text, Value& out, std::string& err);

// Checks choices and range. Returns "" when fine, else a message such as
// "0 is out of range (must be > 0)" or "unknown model 'resnet'; did you mean 'resnet18'?".
std::string check_value(const ParamSpec& spec, const Value& v);

// A JSON object (already parsed) -> complete Params; throws std::runtime_error naming the key.
Params params_from_object(const base::Json& obj);

// The typed struct from values in param_table() order (the expander's per-job vector), and back.
JobParams struct_of_values(const std::vector<Value>& v);
void values_of_struct(const JobParams& jp, std::vector<Value>& v);

// Appends `"key":value` exactly as canonical_json writes one member. The expander pre-renders
// members with it and joins them, which must give the same text as canonical_json(params).
void append_member(std::string& out, const std::string& key, const Value& v);
// job_id() in two steps: the 64-bit hash of a canonical JSON text, and the 12-hex id (its top 48
// bits). The expander de-duplicates on the id's 48 bits without building strings.
std::uint64_t hash_of_canonical(const std::string& canonical);
std::string id_of_hash(std::uint64_t hash);

// Index of a parameter in param_table(), or -1.
int param_index(const std::string& name);

}  // namespace gridrun::jobs::detail
