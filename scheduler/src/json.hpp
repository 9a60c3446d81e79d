// A small JSON value with a parser and a writer, private to the scheduler (state.json and the
// phase figures). Why our own: the state file is tiny and flat-ish; a dependency for it would be
// heavier than these 200 lines. Numbers are doubles (exact for the integers we store).
#pragma once

#include <map>
#include <memory>
#include <string>
#include <vector>

namespace gridrun::scheduler::json {

struct Value {
  enum class Kind { Null, Bool, Number, String, Array, Object } kind = Kind::Null;
  bool b = false;
  double num = 0;
  std::string str;
  std::vector<Value> arr;
  std::vector<std::pair<std::string, Value>> obj;  // insertion order kept

  static Value number(double v) { Value x; x.kind = Kind::Number; x.num = v; return x; }
  static Value string(std::string v) { Value x; x.kind = Kind::String; x.str = std::move(v); return x; }
  static Value boolean(bool v) { Value x; x.kind = Kind::Bool; x.b = v; return x; }
  static Value array() { Value x; x.kind = Kind::Array; return x; }
  static Value object() { Value x; x.kind = Kind::Object; return x; }

  const Value* get(const std::string& key) const;     // nullptr if absent or not an object
  Value& set(const std::string& key, Value v);          // replaces or appends
  std::string get_string(const std::string& key, const std::string& fallback = "") const;
  double get_number(const std::string& key, double fallback = 0) const;
};

// Throws std::runtime_error with "<origin>: offset N: message".
Value parse(const std::string& text, const std::string& origin);
std::string dump(const Value& v, bool pretty = false);
std::string quote(const std::string& s);

}  // namespace gridrun::scheduler::json
