// See text.hpp.
#include "gridrun/base/text.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstring>

namespace gridrun::base {

std::string csv_quote(std::string_view s) {
  if (s.find_first_of(",\"\n\r") == std::string_view::npos) return std::string(s);
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string shell_quote(std::string_view w) {
  if (!w.empty() && w.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                        "0123456789_-+=/.,:@%") == std::string_view::npos)
    return std::string(w);
  std::string q = "'";
  for (char c : w) {
    if (c == '\'')
      q += "'\\''";
    else
      q += c;
  }
  return q + "'";
}

std::string iso_time(std::time_t t) {
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string iso_now() { return iso_time(std::time(nullptr)); }

std::string iso_minutes(const std::string& iso) {
  if (iso.size() < 16 || iso[10] != 'T') return iso;
  return iso.substr(0, 10) + " " + iso.substr(11, 5) + " UTC";
}

double unix_now() {
  return std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
}

std::optional<std::time_t> parse_iso_time(const std::string& s) {
  std::tm tm{};
  const char* end = strptime(s.c_str(), "%Y-%m-%dT%H:%M:%SZ", &tm);
  if (!end || *end != '\0') return std::nullopt;
  return timegm(&tm);
}

std::string format_duration(double s) {
  char buf[32];
  if (!(s >= 0) || std::isinf(s)) return "?";
  if (s < 60)
    std::snprintf(buf, sizeof buf, "%.0fs", s);
  else if (s < 3600)
    std::snprintf(buf, sizeof buf, "%dm%02ds", static_cast<int>(s) / 60, static_cast<int>(s) % 60);
  else if (s < 86400)
    std::snprintf(buf, sizeof buf, "%dh%02dm", static_cast<int>(s / 3600), static_cast<int>(s / 60) % 60);
  else if (s < 86400.0 * 1e6)
    std::snprintf(buf, sizeof buf, "%dd%02dh", static_cast<int>(s / 86400),
                  static_cast<int>(std::fmod(s / 3600, 24)));
  else  // beyond int's days (issue 45: 1e300 s printed "-2147483648d-8h"): days in short form
    std::snprintf(buf, sizeof buf, "%.3gd", s / 86400);
  return buf;
}

std::string trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

std::vector<std::string> split(std::string_view s, char sep) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const auto pos = s.find(sep, start);
    out.emplace_back(s.substr(start, pos == std::string_view::npos ? std::string_view::npos : pos - start));
    if (pos == std::string_view::npos) return out;
    start = pos + 1;
  }
}

bool starts_with(std::string_view s, std::string_view prefix) {
  return s.size() >= prefix.size() && s.compare(0, prefix.size(), prefix) == 0;
}

bool ends_with(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::vector<std::string> wrap_words(const std::string& lead, const std::vector<std::string>& words,
                                    std::size_t width, const std::string& indent) {
  std::vector<std::string> lines;
  std::string line = lead;
  for (const auto& w : words) {
    if (line.size() + 1 + w.size() > width) {
      lines.push_back(line);
      line = indent + w;
    } else {
      line += " " + w;
    }
  }
  lines.push_back(line);
  return lines;
}

std::string join(const std::vector<std::string>& parts, std::string_view sep) {
  std::string out;
  for (std::size_t k = 0; k < parts.size(); ++k) {
    if (k) out += sep;
    out += parts[k];
  }
  return out;
}

std::string printable_line(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) out += c == '\n' ? ' ' : (c < 0x20 || c >= 0x7f) ? '?' : static_cast<char>(c);
  return out;
}

bool is_utf8(std::string_view s) {
  std::size_t i = 0;
  while (i < s.size()) {
    const auto c = static_cast<unsigned char>(s[i]);
    std::size_t n = 0;
    std::uint32_t cp = 0, min = 0;
    if (c < 0x80) {
      ++i;
      continue;
    }
    if ((c & 0xe0) == 0xc0) {
      n = 1, cp = c & 0x1fu, min = 0x80;
    } else if ((c & 0xf0) == 0xe0) {
      n = 2, cp = c & 0x0fu, min = 0x800;
    } else if ((c & 0xf8) == 0xf0) {
      n = 3, cp = c & 0x07u, min = 0x10000;
    } else {
      return false;  // a continuation byte first, or 0xf8..0xff
    }
    if (n > s.size() - i - 1) return false;  // cut short
    for (std::size_t k = 1; k <= n; ++k) {
      const auto d = static_cast<unsigned char>(s[i + k]);
      if ((d & 0xc0) != 0x80) return false;
      cp = (cp << 6) | (d & 0x3fu);
    }
    if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return false;
    i += n + 1;
  }
  return true;
}

std::string errno_text(int err) {
  char buf[256];
  // GNU strerror_r (_GNU_SOURCE, as g++ and clang++ define it) returns the text, in buf or static.
  const char* t = ::strerror_r(err, buf, sizeof buf);
  return t ? std::string(t) : "errno " + std::to_string(err);
}

std::string signal_text(int sig) {
  // sigdescr_np (glibc 2.32+) returns a constant string per signal: no shared buffer to race on.
  const char* t = ::sigdescr_np(sig);
  return t ? std::string(t) : "signal " + std::to_string(sig);
}

std::string format_fixed(double v, int digits) {
  if (!std::isfinite(v)) return "-";
  char b[64];
  std::snprintf(b, sizeof b, "%.*f", std::clamp(digits, 0, 12), v);
  return b;
}

std::string counted(std::string_view noun, long long n) {
  return std::to_string(n) + " " + std::string(noun) + (n == 1 ? "" : "s");
}

}  // namespace gridrun::base
