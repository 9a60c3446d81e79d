// JSON string escaping for every writer of hand-built JSON (job files, run state, Slurm status,
// profiler traces). One escaper, so every file gridrun writes spells strings the same way.
#pragma once

#include <string>

namespace gridrun::jobs {

// `s` escaped for use inside a JSON string literal (quotes not included): '"' and '\\' escaped,
// \n \r \t \b \f by name, other control characters as \u00XX; UTF-8 passes through unchanged.
std::string json_escape(const std::string& s);

}  // namespace gridrun::jobs
