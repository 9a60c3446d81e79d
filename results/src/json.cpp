// Minimal JSON reader: the results library must not depend on the scheduler (which owns
// state.json) nor pull a JSON dependency into the login-node binary for two flat formats.
#include <cmath>
#include <cstdlib>
#include <stdexcept>

#include "internal.hpp"

namespace gridrun::results::detail {

namespace {

class Parser {
 public:
  Parser(const std::string& s, const std::string& what) : s_(s), what_(what) {}
  Json parse() {
    Json v = value();
    ws();
    if (p_ != s_.size()) error("trailing characters");
    return v;
  }

 private:
  [[noreturn]] void error(const std::string& m) {
    throw std::runtime_error(what_ + ": JSON error at offset " + std::to_string(p_) + ": " + m);
  }
  void ws() {
    while (p_ < s_.size() && (s_[p_] == ' ' || s_[p_] == '\n' || s_[p_] == '\t' || s_[p_] == '\r')) ++p_;
  }
  bool lit(const char* w) {
    std::string t(w);
    if (s_.compare(p_, t.size(), t) == 0) {
      p_ += t.size();
      return true;
    }
    return false;
  }
  Json value() {
    ws();
    if (p_ >= s_.size()) error("unexpected end");
    Json v;
    char c = s_[p_];
    if (c == '{') {
      v.kind = Json::Object;
      ++p_;
      ws();
      if (p_ < s_.size() && s_[p_] == '}') { ++p_; return v; }
      for (;;) {
        ws();
        if (p_ >= s_.size() || s_[p_] != '"') error("expected a key");
        std::string k = string();
        ws();
        if (p_ >= s_.size() || s_[p_] != ':') error("expected ':'");
        ++p_;
        v.obj.emplace_back(k, value());
        ws();
        if (p_ < s_.size() && s_[p_] == ',') { ++p_; continue; }
        if (p_ < s_.size() && s_[p_] == '}') { ++p_; return v; }
        error("expected ',' or '}'");
      }
    }
    if (c == '[') {
      v.kind = Json::Array;
      ++p_;
      ws();
      if (p_ < s_.size() && s_[p_] == ']') { ++p_; return v; }
      for (;;) {
        v.arr.push_back(value());
        ws();
        if (p_ < s_.size() && s_[p_] == ',') { ++p_; continue; }
        if (p_ < s_.size() && s_[p_] == ']') { ++p_; return v; }
        error("expected ',' or ']'");
      }
    }
    if (c == '"') {
      v.kind = Json::String;
      v.str = string();
      return v;
    }
    if (lit("true")) { v.kind = Json::Bool; v.b = true; return v; }
    if (lit("false")) { v.kind = Json::Bool; return v; }
    if (lit("null")) return v;
    if (lit("NaN")) { v.kind = Json::Number; v.num = NAN; return v; }
    std::size_t start = p_;
    if (p_ < s_.size() && (s_[p_] == '-' || s_[p_] == '+')) ++p_;
    bool is_int = true;
    while (p_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[p_])) || s_[p_] == '.' ||
                              s_[p_] == 'e' || s_[p_] == 'E' || s_[p_] == '-' || s_[p_] == '+')) {
      if (s_[p_] == '.' || s_[p_] == 'e' || s_[p_] == 'E') is_int = false;
      ++p_;
    }
    if (p_ == start) error(std::string("unexpected character '") + c + "'");
    std::string t = s_.substr(start, p_ - start);
    v.kind = Json::Number;
    char* end = nullptr;
    v.num = std::strtod(t.c_str(), &end);
    if (*end) error("bad number '" + t + "'");
    v.is_int = is_int;
    if (is_int) v.i = std::strtoll(t.c_str(), nullptr, 10);
    return v;
  }
  std::string string() {
    ++p_;  // opening quote
    std::string out;
    while (p_ < s_.size() && s_[p_] != '"') {
      char c = s_[p_++];
      if (c != '\\') { out += c; continue; }
      if (p_ >= s_.size()) error("bad escape");
      char e = s_[p_++];
      switch (e) {
        case 'n': out += '\n'; break;
        case 't': out += '\t'; break;
        case 'r': out += '\r'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'u': {
          if (p_ + 4 > s_.size()) error("bad \\u escape");
          unsigned cp = std::stoul(s_.substr(p_, 4), nullptr, 16);
          p_ += 4;
          if (cp < 0x80) out += static_cast<char>(cp);
          else if (cp < 0x800) { out += static_cast<char>(0xC0 | (cp >> 6)); out += static_cast<char>(0x80 | (cp & 0x3F)); }
          else { out += static_cast<char>(0xE0 | (cp >> 12)); out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F)); out += static_cast<char>(0x80 | (cp & 0x3F)); }
          break;
        }
        default: out += e;
      }
    }
    if (p_ >= s_.size()) error("unterminated string");
    ++p_;
    return out;
  }

  const std::string& s_;
  std::string what_;
  std::size_t p_ = 0;
};

}  // namespace

const Json* Json::get(const std::string& key) const {
  for (const auto& [k, v] : obj)
    if (k == key) return &v;
  return nullptr;
}

Json parse_json(const std::string& text, const std::string& what) { return Parser(text, what).parse(); }

std::string json_escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      case '\r': out += "\\r"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out;
}

std::string trim(const std::string& s) {
  std::size_t a = s.find_first_not_of(" \t\r\n");
  if (a == std::string::npos) return "";
  std::size_t b = s.find_last_not_of(" \t\r\n");
  return s.substr(a, b - a + 1);
}

}  // namespace gridrun::results::detail
