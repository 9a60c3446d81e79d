// See json.hpp. Parse errors are re-thrown with line and column computed from nlohmann's byte
// offset, because "offset 1234" means nothing to someone looking at a job file in an editor.
#include "gridrun/base/json.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
#include <unordered_map>
#include <vector>

#include "gridrun/base/fs.hpp"
#include "gridrun/base/text.hpp"

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

// Builds an ordered_json from nlohmann's SAX events. nlohmann's own DOM builder inserts each
// member with ordered_map::operator[], which searches every member first: parsing an object of n
// members cost O(n^2) (state.json of 100,000 jobs: most of `gridrun status`'s 10 s, issue 60).
// Here a member is appended, and an object's keys are looked up in a hash table once it has more
// than a few. A repeated key keeps its first position and takes the last value, as before.
// (The check below flags the implicit special members, through nlohmann's basic_json members,
// which it cannot see as non-throwing; the builder lives on parse_json's stack only.)
// NOLINTNEXTLINE(bugprone-exception-escape)
class OrderedBuilder {
 public:
  using number_integer_t = Json::number_integer_t;
  using number_unsigned_t = Json::number_unsigned_t;
  using number_float_t = Json::number_float_t;
  using string_t = Json::string_t;
  using binary_t = Json::binary_t;

  Json root;
  std::string error;  // what nlohmann or a value check said, without its "[json...]" prefix
  std::size_t error_byte = 0;
  bool positioned = false;  // a syntax error (a byte offset); else a value error (no position)

  // Members of the root object whose values are parsed but not kept, and the one whose members
  // are handed over one by one (JsonParseOptions).
  const std::vector<std::string>* skip_members = nullptr;
  const JsonParseOptions* stream = nullptr;

  bool null() { return skipped_scalar() || put(Json(nullptr)); }
  bool boolean(bool v) { return skipped_scalar() || put(Json(v)); }
  bool number_integer(number_integer_t v) { return skipped_scalar() || put(Json(v)); }
  bool number_unsigned(number_unsigned_t v) { return skipped_scalar() || put(Json(v)); }
  bool number_float(number_float_t v, const string_t& text) {
    if (!std::isfinite(v)) {  // as nlohmann's DOM builder (its error 406)
      error = "number overflow parsing '" + text + "'";
      return false;
    }
    return skipped_scalar() || put(Json(v));
  }
  bool string(string_t& v) { return skipped_scalar() || put(Json(std::move(v))); }
  bool binary(binary_t& v) { return skipped_scalar() || put(Json::binary(std::move(v))); }
  bool start_object(std::size_t /*elements*/) {
    if (skipped_open()) return true;
    const bool streamed = stream_next_;
    stream_next_ = false;
    open_.push_back({put_and_get(Json::object()), {}, {}, streamed});
    return true;
  }
  bool key(string_t& k) {
    if (skip_depth_ > 0) return true;
    if (skip_members && open_.size() == 1 &&
        std::find(skip_members->begin(), skip_members->end(), k) != skip_members->end()) {
      skip_next_ = true;
      return true;
    }
    Open& o = open_.back();
    if (o.streamed) {  // a member handed over when its value is complete (handed_over)
      stream_key_ = std::move(k);
      stream_value_ = nullptr;
      member_ = &stream_value_;
      return true;
    }
    stream_next_ = stream && open_.size() == 1 && k == stream->stream_member;
    std::size_t at = o.members.size();
    if (!o.index.empty()) {
      if (auto it = o.index.find(k); it != o.index.end()) at = it->second;
    } else {
      for (std::size_t i = 0; i < o.members.size(); ++i)
        if (o.members[i].first == k) at = i;
    }
    if (at == o.members.size()) {
      o.members.emplace_back(k, nullptr);
      if (!o.index.empty() || o.members.size() > kIndexFrom) {
        if (o.index.empty())
          for (std::size_t i = 0; i < o.members.size(); ++i) o.index.emplace(o.members[i].first, i);
        else
          o.index.emplace(std::move(k), at);
      }
    }
    member_ = &o.members[at].second;
    return true;
  }
  bool end_object() {
    if (skip_depth_ > 0) {
      --skip_depth_;
      return true;
    }
    // Into ordered_map, reserved: its pairs have a const key, so a growing vector of them copies
    // every value it moves (deep copies of whole sub-objects); the staging pairs move.
    Open& o = open_.back();
    auto& members = static_cast<Json::object_t::Container&>(o.value->get_ref<Json::object_t&>());
    members.reserve(o.members.size());
    for (auto& [k, v] : o.members) members.emplace_back(std::move(k), std::move(v));
    open_.pop_back();
    handed_over();
    return true;
  }
  bool start_array(std::size_t /*elements*/) {
    if (skipped_open()) return true;
    stream_next_ = false;
    open_.push_back({put_and_get(Json::array()), {}, {}});
    return true;
  }
  bool end_array() {
    if (skip_depth_ > 0) {
      --skip_depth_;
      return true;
    }
    open_.pop_back();
    handed_over();
    return true;
  }
  bool parse_error(std::size_t /*position*/, const std::string& /*last_token*/,
                   const nlohmann::detail::exception& e) {
    // e.what() is "[json.exception.parse_error.101] parse error at line 1, column 2: ..."; keep
    // only the part after the position, ours is computed the same way for every caller.
    error = e.what();
    if (const auto* pe = dynamic_cast<const nlohmann::json::parse_error*>(&e)) {
      const auto colon = error.find(": ", error.find("parse error"));
      if (colon != std::string::npos) error = error.substr(colon + 2);
      positioned = true;
      error_byte = pe->byte > 0 ? pe->byte - 1 : 0;
    } else if (const auto close = error.find("] "); close != std::string::npos) {
      error = error.substr(close + 2);
    }
    return false;
  }

 private:
  static constexpr std::size_t kIndexFrom = 16;  // below: a linear search is faster than hashing
  struct Open {
    Json* value;
    std::vector<std::pair<std::string, Json>> members;   // an object's, until it closes
    std::unordered_map<std::string, std::size_t> index;  // key -> member position (large objects)
    bool streamed = false;  // JsonParseOptions::stream_member's object: members handed over, not kept
  };
  std::vector<Open> open_;
  Json* member_ = nullptr;      // where the value after key() goes
  bool skip_next_ = false;      // the next value is a skipped member's
  std::size_t skip_depth_ = 0;  // containers open inside a skipped member's value
  bool stream_next_ = false;    // the next value is the streamed member's
  std::string stream_key_;      // the streamed object's member being built, and its value
  Json stream_value_;

  // A value just completed: a direct member of the streamed object goes to on_member.
  void handed_over() {
    if (open_.empty() || !open_.back().streamed) return;
    stream->on_member(stream_key_, stream_value_);
    stream_value_ = nullptr;
  }

  // A scalar that is (inside) a skipped member's value: true, nothing kept.
  bool skipped_scalar() {
    if (skip_depth_ > 0) return true;
    if (!skip_next_) return false;
    skip_next_ = false;
    return true;
  }
  // An object or array that opens (inside) a skipped member's value: true, counted, nothing kept.
  bool skipped_open() {
    if (skip_depth_ == 0 && !skip_next_) return false;
    skip_next_ = false;
    ++skip_depth_;
    return true;
  }

  // Places `v` (the root, an array's next element or the pending member) and returns where it is.
  // Pointers stay valid: only the innermost open container grows (an open object's members are
  // staged in Open::members, moved into the object when it closes).
  Json* put_and_get(Json v) {
    if (open_.empty()) {
      root = std::move(v);
      return &root;
    }
    Json& top = *open_.back().value;
    if (top.is_array()) {
      top.get_ref<Json::array_t&>().push_back(std::move(v));
      return &top.get_ref<Json::array_t&>().back();
    }
    *member_ = std::move(v);
    return member_;
  }
  bool put(Json v) {
    stream_next_ = false;
    put_and_get(std::move(v));
    handed_over();
    return true;
  }
};

Json parse_json(std::string_view text, const std::string& origin, const JsonParseOptions& opts) {
  OrderedBuilder b;
  if (!opts.skip_members.empty()) b.skip_members = &opts.skip_members;
  if (opts.on_member && !opts.stream_member.empty()) b.stream = &opts;
  bool ok = false;
  try {
    ok = Json::sax_parse(text.begin(), text.end(), &b);
  } catch (const nlohmann::json::exception& e) {
    b.error = e.what();  // not expected: the builder reports through parse_error
  }
  if (ok && b.error.empty()) return std::move(b.root);
  if (b.positioned)
    throw std::runtime_error(origin + ":" + where(text, b.error_byte) + ": invalid JSON: " + b.error);
  // Not a syntax error but a value nlohmann cannot hold (a number literal that overflows a
  // double, found by fuzzing job files, issue 24); there is no position for these.
  throw std::runtime_error(origin + ": invalid JSON: " + b.error);
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

void append_json_string(std::string& out, std::string_view s) {
  if (!is_utf8(s)) {
    out += Json(std::string(s)).dump(-1, ' ', false, Json::error_handler_t::replace);
    return;
  }
  out.push_back('"');
  append_json_escaped(out, s);
  out.push_back('"');
}

void append_json_double(std::string& out, double v) {
  if (!std::isfinite(v)) {
    out += "null";
    return;
  }
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  out.append(buf, r.ptr);
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
