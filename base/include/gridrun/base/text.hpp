// Text helpers shared by every command's output and every file gridrun writes.
#pragma once

#include <ctime>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gridrun::base {

// RFC 4180 field: quoted (inner quotes doubled) only when it holds a comma, quote or newline.
std::string csv_quote(std::string_view field);
// A word for a POSIX shell, quoted only when needed (printing commands, writing scripts).
std::string shell_quote(std::string_view word);

// ISO 8601 UTC, seconds: "2024-05-01T12:00:00Z".
std::string iso_time(std::time_t t);
std::string iso_now();
// Seconds since the epoch with sub-second precision (wall clock: timestamps across processes and
// hosts, never durations inside one process).
double unix_now();
// iso_time's "YYYY-MM-DDTHH:MM:SSZ" back to seconds since the epoch; nullopt for anything else.
std::optional<std::time_t> parse_iso_time(const std::string& s);
// iso_time's text for people, to the minute: "2026-11-28 15:02 UTC"; any other text as it is.
std::string iso_minutes(const std::string& iso);
// Short human duration: "42s", "3m05s", "2h10m", "3d04h", "1.16e+07d" (a million days or more);
// "?" for negative, infinite or NaN.
std::string format_duration(double seconds);
// `v` with `digits` decimals ("1.66"); "-" for NaN or infinity.
std::string format_fixed(double v, int digits);
// `n` and the noun, plural but for 1: counted("node", 1) = "1 node", counted("node", 2) = "2 nodes"
// (issue 58: "1 nodes"). Regular plurals only (an "s").
std::string counted(std::string_view noun, long long n);

std::string trim(std::string_view s);                          // without leading and trailing white space
std::vector<std::string> split(std::string_view s, char sep);  // keeps empty fields
bool starts_with(std::string_view s, std::string_view prefix);
bool ends_with(std::string_view s, std::string_view suffix);
// `lead`, then `words` each after a space, broken into lines before a word that would make a line
// longer than `width` bytes; continuation lines start with `indent` (help text and notes under
// tables; a word longer than the width gets a line of its own).
std::vector<std::string> wrap_words(const std::string& lead, const std::vector<std::string>& words,
                                    std::size_t width, const std::string& indent);
// `parts` with `sep` between them ("a; b; c").
std::string join(const std::vector<std::string>& parts, std::string_view sep);
// One printable ASCII line: newlines become spaces, other control and non-ASCII bytes '?'. For
// error messages that may quote damaged bytes (a parse error of a corrupt file) before they reach
// a terminal, a warning line or `gridrun status`.
std::string printable_line(std::string_view s);
// Whether `s` is well-formed UTF-8 (RFC 3629: no overlong forms, surrogates or code points above
// U+10FFFF). A path that is not cannot travel in JSON (nlohmann rejects or replaces it), so the
// flags whose paths go into JSON messages check it before anything is written.
bool is_utf8(std::string_view s);

// The text of an errno value / of a signal. std::strerror and strsignal may share one static
// buffer between threads (clang-tidy concurrency-mt-unsafe); these use strerror_r and the constant
// sigdescr_np strings instead, so that any thread may call them.
std::string errno_text(int err);
std::string signal_text(int sig);

}  // namespace gridrun::base
