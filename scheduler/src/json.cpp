// Minimal JSON for state.json; see json.hpp.
#include "json.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>

#include "gridrun/jobs/json.hpp"

namespace gridrun::scheduler::json {

const Value* Value::get(const std::string& key) const {
  if (kind != Kind::Object) return nullptr;
  for (const auto& kv : obj)
    if (kv.first == key) return &kv.second;
  return nullptr;
}

Value& Value::set(const std::string& key, Value v) {
  kind = Kind::Object;
  for (auto& kv : obj)
    if (kv.first == key) return kv.second = std::move(v);
  obj.emplace_back(key, std::move(v));
  return obj.back().second;
}

std::string Value::get_string(const std::string& key, const std::string& fallback) const {
  const Value* v = get(key);
  return v && v->kind == Kind::String ? v->str : fallback;
}

double Value::get_number(const std::string& key, double fallback) const {
  const Value* v = get(key);
  return v && v->kind == Kind::Number ? v->num : fallback;
}

namespace {

struct Parser {
  const std::string& s;
  const std::string& origin;
  std::size_t i = 0;

  [[noreturn]] void fail(const std::string& msg) const {
    throw std::runtime_error(origin + ": offset " + std::to_string(i) + ": " + msg);
  }
  void ws() {
    while (i < s.size() && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r')) ++i;
  }
  bool lit(const char* w) {
    std::size_t n = 0;
    while (w[n]) ++n;
    if (s.compare(i, n, w) == 0) { i += n; return true; }
    return false;
  }
  std::string str() {
    if (s[i] != '"') fail("expected a string");
    ++i;
    std::string out;
    while (i < s.size() && s[i] != '"') {
      char c = s[i++];
      if (c != '\\') { out += c; continue; }
      if (i >= s.size()) fail("bad escape");
      char e = s[i++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': {
          if (i + 4 > s.size()) fail("bad \\u escape");
          unsigned cp = static_cast<unsigned>(std::strtoul(s.substr(i, 4).c_str(), nullptr, 16));
          i += 4;
          if (cp < 0x80) out += static_cast<char>(cp);
          else if (cp < 0x800) { out += static_cast<char>(0xC0 | (cp >> 6)); out += static_cast<char>(0x80 | (cp & 0x3F)); }
          else { out += static_cast<char>(0xE0 | (cp >> 12)); out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F)); out += static_cast<char>(0x80 | (cp & 0x3F)); }
          break;
        }
        default: out += e;
      }
    }
    if (i >= s.size()) fail("unterminated string");
    ++i;
    return out;
  }
  Value value() {
    ws();
    if (i >= s.size()) fail("unexpected end");
    const char c = s[i];
    if (c == '{') {
      ++i;
      Value v = Value::object();
      ws();
      if (i < s.size() && s[i] == '}') { ++i; return v; }
      for (;;) {
        ws();
        std::string k = str();
        ws();
        if (i >= s.size() || s[i] != ':') fail("expected ':'");
        ++i;
        v.obj.emplace_back(std::move(k), value());
        ws();
        if (i < s.size() && s[i] == ',') { ++i; continue; }
        if (i < s.size() && s[i] == '}') { ++i; return v; }
        fail("expected ',' or '}'");
      }
    }
    if (c == '[') {
      ++i;
      Value v = Value::array();
      ws();
      if (i < s.size() && s[i] == ']') { ++i; return v; }
      for (;;) {
        v.arr.push_back(value());
        ws();
        if (i < s.size() && s[i] == ',') { ++i; continue; }
        if (i < s.size() && s[i] == ']') { ++i; return v; }
        fail("expected ',' or ']'");
      }
    }
    if (c == '"') return Value::string(str());
    if (lit("true")) return Value::boolean(true);
    if (lit("false")) return Value::boolean(false);
    if (lit("null")) return Value{};
    char* end = nullptr;
    double d = std::strtod(s.c_str() + i, &end);
    if (end == s.c_str() + i) fail("unexpected character");
    i = static_cast<std::size_t>(end - s.c_str());
    return Value::number(d);
  }
};

void dump_to(const Value& v, std::string& out, bool pretty, int depth) {
  auto nl = [&](int d) {
    if (!pretty) return;
    out += '\n';
    out.append(static_cast<std::size_t>(2 * d), ' ');
  };
  switch (v.kind) {
    case Value::Kind::Null: out += "null"; break;
    case Value::Kind::Bool: out += v.b ? "true" : "false"; break;
    case Value::Kind::Number: {
      if (!std::isfinite(v.num)) { out += "null"; break; }
      char buf[40];
      if (v.num == std::floor(v.num) && std::fabs(v.num) < 1e15)
        std::snprintf(buf, sizeof buf, "%.0f", v.num);
      else
        std::snprintf(buf, sizeof buf, "%.17g", v.num);
      out += buf;
      break;
    }
    case Value::Kind::String: out += quote(v.str); break;
    case Value::Kind::Array:
      out += '[';
      for (std::size_t k = 0; k < v.arr.size(); ++k) {
        if (k) out += pretty ? ", " : ",";
        dump_to(v.arr[k], out, false, depth + 1);
      }
      out += ']';
      break;
    case Value::Kind::Object:
      out += '{';
      for (std::size_t k = 0; k < v.obj.size(); ++k) {
        if (k) out += ',';
        nl(depth + 1);
        out += quote(v.obj[k].first);
        out += pretty ? ": " : ":";
        dump_to(v.obj[k].second, out, pretty, depth + 1);
      }
      if (!v.obj.empty()) nl(depth);
      out += '}';
      break;
  }
}

}  // namespace

Value parse(const std::string& text, const std::string& origin) {
  Parser p{text, origin};
  Value v = p.value();
  p.ws();
  if (p.i != text.size()) p.fail("trailing characters");
  return v;
}

std::string dump(const Value& v, bool pretty) {
  std::string out;
  dump_to(v, out, pretty, 0);
  return out;
}

std::string quote(const std::string& s) { return "\"" + jobs::json_escape(s) + "\""; }

}  // namespace gridrun::scheduler::json
