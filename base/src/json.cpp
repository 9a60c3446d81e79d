// See json.hpp. Parse errors are re-thrown with line and column computed from nlohmann's byte
// offset, because "offset 1234" means nothing to someone looking at a job file in an editor.
#include "gridrun/base/json.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "gridrun/base/fs.hpp"

namespace gridrun::base {

namespace {
std::string where(std::string_view text, std::size_t byte) {
  std::size_t line = 1, col = 1;
  for (std::size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return std::to_string(line) + ":" + std::to_string(col);
}
}  // namespace

Json parse_json(std::string_view text, const std::string& origin) {
  try {
    return Json::parse(text.begin(), text.end());
  } catch (const nlohmann::json::parse_error& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 2: ..."; keep
    // only the part after the position, ours is computed the same way for every caller.
    std::string msg = e.what();
    const auto colon = msg.find(": ", msg.find("parse error"));
    if (colon != std::string::npos) msg = msg.substr(colon + 2);
    const std::size_t at = e.byte > 0 ? e.byte - 1 : 0;
    throw std::runtime_error(origin + ":" + where(text, at) + ": invalid JSON: " + msg);
  } catch (const nlohmann::json::exception& e) {
    // Not a syntax error but a value nlohmann cannot hold (406: a number literal that overflows a
    // double, found by fuzzing job files, issue 24); nlohmann gives no position for these.
    std::string msg = e.what();
    const auto close = msg.find("] ");
    if (close != std::string::npos) msg = msg.substr(close + 2);
    throw std::runtime_error(origin + ": invalid JSON: " + msg);
  }
}

void append_new_member(Json& object, std::string key, Json value) {
  if (!object.is_object()) throw std::logic_error("append_new_member: not a JSON object");
  // ordered_map is a vector of pairs underneath; its Container is that vector.
  auto& members = static_cast<Json::object_t::Container&>(object.get_ref<Json::object_t&>());
  members.emplace_back(std::move(key), std::move(value));
}

Json read_json_file(const std::string& path, const FileKind& kind) {
  return parse_json(read_file(path, kind), path);
}

void append_json_escaped(std::string& out, std::string_view s) {
  unsigned special = 0;  // fast path: names and values almost never need escaping
  for (unsigned char c : s) special |= (c < 0x20) | (c == '"') | (c == '\\');
  if (!special) {
    out.append(s.data(), s.size());
    return;
  }
  for (unsigned char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (c < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out.push_back(static_cast<char>(c));
        }
    }
  }
}

std::string json_escape(std::string_view s) {
  std::string out;
  append_json_escaped(out, s);
  return out;
}

std::string json_quote(std::string_view s) {
  std::string out = "\"";
  append_json_escaped(out, s);
  out += '"';
  return out;
}

std::string get_string(const Json& obj, const char* key, const std::string& fallback) {
  if (!obj.is_object()) return fallback;
  const auto it = obj.find(key);
  return it != obj.end() && it->is_string() ? it->get<std::string>() : fallback;
}

std::string dump_line(const Json& v) { return v.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json json_number(double v, int digits) {
  if (std::isnan(v)) return nullptr;
  if (std::isinf(v)) return v > 0 ? 1e308 : -1e308;
  if (digits < 17) {
    char buf[48];
    std::snprintf(buf, sizeof buf, "%.*g", digits, v);
    v = std::strtod(buf, nullptr);
  }
  // Whole numbers (counts, bytes, and figures that round to one) as integers: "2", not "2.0".
  if (v == std::trunc(v) && std::fabs(v) < 9007199254740992.0) return static_cast<long long>(v);
  return v;
}

double get_number(const Json& obj, const char* key, double fallback) {
  if (!obj.is_object()) return fallback;
  const auto it = obj.find(key);
  return it != obj.end() && it->is_number() ? it->get<double>() : fallback;
}

long long get_int(const Json& obj, const char* key, long long fallback) {
  if (!obj.is_object()) return fallback;
  const auto it = obj.find(key);
  if (it == obj.end() || !it->is_number()) return fallback;
  // An unsigned literal beyond long long's range would wrap to a negative number: absent too.
  if (it->is_number_unsigned() && it->get<unsigned long long>() > 9223372036854775807ULL) return fallback;
  if (!it->is_number_float()) return it->get<long long>();
  // A float outside long long's range (a damaged file; found by fuzzing state.json, issue 24) has
  // no integer value: converting it is undefined behaviour, so it reads as absent.
  const double d = it->get<double>();
  return std::isfinite(d) && d >= -9.2e18 && d <= 9.2e18 ? static_cast<long long>(d) : fallback;
}

bool get_bool(const Json& obj, const char* key, bool fallback) {
  if (!obj.is_object()) return fallback;
  const auto it = obj.find(key);
  return it != obj.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

}  // namespace gridrun::base
