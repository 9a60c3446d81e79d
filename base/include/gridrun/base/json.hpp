// JSON for every reader and writer of gridrun's files (job files, state.json, Slurm status,
// profiler traces, report JSON), through Debian's nlohmann-json.
//
// Why ordered_json: the files are read by people too, and keys in the order they were written
// (id first, then parameters in schema order) diff and read better than sorted ones. Why our own
// parse function: a parse error must name the file, line and column, which nlohmann's message
// (a byte offset) does not.
//
// Job ids are NOT computed from this writer: the canonical-id JSON stays in jobs/ because ids
// depend on its exact bytes (number spelling, key order), which must never change.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace gridrun::base {

using Json = nlohmann::ordered_json;

struct JsonParseOptions {
  // Members of the root object that are checked as JSON but not kept (absent from the result):
  // a reader that needs the head of a large file (state.json of 100,000 jobs without its "jobs")
  // builds no node of them.
  std::vector<std::string> skip_members;
  // A member of the root object, an object itself, whose members are handed to on_member one at a
  // time as each is complete, and not kept: the result holds it as an empty object. A reader of one
  // large table (state.json's "jobs" of 100,000 records) builds each row's nodes and lets them go
  // instead of holding the whole table (issue 60). A key that repeats is handed over again.
  std::string stream_member;
  std::function<void(std::string& key, Json& value)> on_member;
};

// Parses `text`; throws std::runtime_error "ORIGIN:LINE:COL: MESSAGE" on malformed input.
Json parse_json(std::string_view text, const std::string& origin, const JsonParseOptions& opts = {});

// Appends a member the caller knows `object` does not have yet (keys of a std::map, say), in O(1):
// ordered_json's own insert searches every member first, which makes an object of n members cost
// O(n^2) to build (state.json of 10,000 jobs, rewritten as each job ends).
void append_new_member(Json& object, std::string key, Json value);
// Reads (base::read_file, with the rules of `kind`: fs.hpp) and parses a whole file; throws
// std::runtime_error naming the path and the cause.
struct FileKind;
Json read_json_file(const std::string& path, const FileKind& kind);

// `v` on one line without spaces; invalid UTF-8 in strings is replaced (U+FFFD), never thrown for.
std::string dump_line(const Json& v);
// A double as JSON has it: NaN is null and +-infinity +-1e308 (JSON has neither), a whole number
// an integer; others rounded to `digits` significant digits, so that the dump is as short as the
// figure is precise.
Json json_number(double v, int digits = 17);

// JSON string escaping for hand-built JSON (the canonical id writer, streaming writers):
// '"' and '\\' escaped, \n \r \t \b \f by name, other control characters as \u00XX.
void append_json_escaped(std::string& out, std::string_view s);
std::string json_escape(std::string_view s);
std::string json_quote(std::string_view s);  // escaped and in double quotes
// For streaming writers of large documents (a status of 100,000 jobs): `s` quoted, its invalid
// UTF-8 replaced by U+FFFD as nlohmann's replace handler does; `v` as the shortest text that reads
// back to the same double (std::to_chars), null for NaN and infinities (as nlohmann writes them).
void append_json_string(std::string& out, std::string_view s);
void append_json_double(std::string& out, double v);

// Typed field access with a fallback, for tolerant readers of files other versions may have
// written (a missing or mistyped key gives the fallback, never an exception).
std::string get_string(const Json& obj, const char* key, const std::string& fallback = "");
double get_number(const Json& obj, const char* key, double fallback = 0);
long long get_int(const Json& obj, const char* key, long long fallback = 0);
bool get_bool(const Json& obj, const char* key, bool fallback = false);

}  // namespace gridrun::base
