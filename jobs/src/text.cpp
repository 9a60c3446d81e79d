// See text.hpp. Number formatting uses std::to_chars (shortest round-trip, locale independent);
// string escaping is gridrun::base's (its bytes are part of every id: tests pin them).
#include "text.hpp"

#include "gridrun/base/json.hpp"
#include "gridrun/base/text.hpp"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace gridrun::jobs::detail {

void append_json_string(std::string& out, const std::string& s) {
  out.push_back('"');
  base::append_json_escaped(out, s);  // the one escaper; ids depend on its exact bytes
  out.push_back('"');
}

std::string format_double(double v) {
  if (v == 0.0) return "0.0";  // also folds -0.0 into 0.0: one spelling, one id
  char buf[64];
  auto res = std::to_chars(buf, buf + sizeof buf, v);
  std::string s(buf, res.ptr);
  if (s.find_first_of(".en") == std::string::npos) s += ".0";  // 'n': nan/inf never get here
  return s;
}

bool parse_double(const std::string& text, double& out) {
  std::string s = base::trim(text);
  if (s.empty()) return false;
  const char* b = s.c_str();
  if (*b == '+') ++b;
  // strtod accepts "nan", "inf" and hex floats; a parameter value is never one of those.
  for (const char* p = b; *p; ++p) {
    if (!(std::isdigit(static_cast<unsigned char>(*p)) || *p == '.' || *p == 'e' || *p == 'E' || *p == '-' ||
          *p == '+'))
      return false;
  }
  char* end = nullptr;
  double v = std::strtod(b, &end);
  if (end == b || *end != '\0' || !std::isfinite(v)) return false;
  out = v;
  return true;
}

bool parse_int(const std::string& text, std::int64_t& out) {
  std::string s = base::trim(text);
  if (s.empty()) return false;
  const char* b = s.c_str();
  if (*b == '+') ++b;
  std::int64_t v = 0;
  auto res = std::from_chars(b, s.c_str() + s.size(), v);
  if (res.ec == std::errc() && res.ptr == s.c_str() + s.size()) {
    out = v;
    return true;
  }
  // "1e3" or "64.0": an integral value spelled as a float is the same number.
  double d = 0;
  if (!parse_double(s, d)) return false;
  if (d != std::floor(d) || std::fabs(d) > 9.0e15) return false;
  out = static_cast<std::int64_t>(d);
  return true;
}

bool is_identifier(const std::string& s) {
  bool ok = !s.empty() && std::isdigit(static_cast<unsigned char>(s[0])) == 0;
  for (char c : s) ok = ok && (std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '_');
  return ok;
}

bool parse_bool(const std::string& text, bool& out) {
  std::string s = base::trim(text);
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  if (s == "true" || s == "yes" || s == "on") {
    out = true;
    return true;
  }
  if (s == "false" || s == "no" || s == "off") {
    out = false;
    return true;
  }
  return false;
}

std::size_t edit_distance(const std::string& a, const std::string& b) {
  // Optimal string alignment: like Levenshtein, plus adjacent transpositions ("gird" -> "grid").
  const std::size_t n = a.size(), m = b.size();
  std::vector<std::vector<std::size_t>> d(n + 1, std::vector<std::size_t>(m + 1));
  for (std::size_t i = 0; i <= n; ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= m; ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= n; ++i) {
    for (std::size_t j = 1; j <= m; ++j) {
      std::size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[n][m];
}

std::string closest(const std::string& word, const std::vector<std::string>& candidates) {
  // Close in edits: 1 for short words, about a third of the length for longer ones.
  const std::size_t limit = std::max<std::size_t>(1, word.size() / 3);
  std::string best;
  std::size_t best_d = limit + 1;
  bool best_contains = false;
  for (const auto& c : candidates) {
    std::size_t d = edit_distance(word, c);
    // On a tie, a candidate that starts with the word wins: "resnet" -> "resnet18", not "lenet".
    bool contains = c.compare(0, word.size(), word) == 0;
    if (d < best_d || (d == best_d && contains && !best_contains && !best.empty())) {
      best_d = d;
      best = c;
      best_contains = contains;
    }
  }
  if (!best.empty() || word.size() < 3) return best;
  // Otherwise a candidate containing the word, or contained in it: "batch" -> "batch_per_rank".
  for (const auto& c : candidates)
    if (c.find(word) != std::string::npos || word.find(c) != std::string::npos) return c;
  return {};
}

}  // namespace gridrun::jobs::detail
