// Text helpers shared by the jobs library's sources (not installed): JSON string literals, the one
// number format used everywhere a job is written, and edit distance for "did you mean" hints.
//
// Why one number format: job ids hash the canonical JSON, so every writer must spell a value the
// same way; keeping the formatter in one place makes "0.10", "1e-1" and "0.1" one job.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace gridrun::jobs::detail {

// Appends `s` as a JSON string literal (quotes included), escaped by base::append_json_escaped:
// control characters become \uXXXX; other bytes (UTF-8) pass through unchanged.
void append_json_string(std::string& out, const std::string& s);

// Shortest decimal that reads back as the same double, always containing '.' or 'e' so that a
// reader can tell a float from an integer ("1.0", "0.1", "1e-05").
std::string format_double(double v);

// Strict whole-string parses (no leading/trailing junk). Integers also accept an integral float
// spelling such as "1e3". Return false on failure.
bool parse_int(const std::string& s, std::int64_t& out);
bool parse_double(const std::string& s, double& out);
bool parse_bool(const std::string& s, bool& out);

// Letters, digits and '_', not starting with a digit: an environment variable's name, a grid's own
// parameter's (so that {name} works), a --set/--only key that may be one.
bool is_identifier(const std::string& s);

// Levenshtein distance, and the closest candidate within a distance that scales with the length
// of `word` (empty when nothing is close enough).
std::size_t edit_distance(const std::string& a, const std::string& b);
std::string closest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace gridrun::jobs::detail
