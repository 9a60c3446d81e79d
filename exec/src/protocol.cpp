// See protocol.hpp.
#include "protocol.hpp"

#include <cmath>
#include <limits>
#include <stdexcept>

#include "gridrun/base/json.hpp"

namespace gridrun::exec {

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// NaN, Infinity and -Infinity outside strings replaced by null (json.dumps' non-JSON tokens).
std::string nulls_for_non_finite(std::string_view s) {
  std::string out;
  bool in_string = false, escaped = false;
  for (std::size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    if (in_string) {
      out.push_back(c);
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
      continue;
    }
    if (c == '"') in_string = true;
    bool hit = false;
    for (std::string_view tok :
         {std::string_view("-Infinity"), std::string_view("Infinity"), std::string_view("NaN")})
      if (s.substr(i, tok.size()) == tok) {
        out += "null";
        i += tok.size() - 1;
        hit = true;
        break;
      }
    if (!hit) out.push_back(c);
  }
  return out;
}

// A member as a number: null (a non-finite float) is NaN; anything else is not a number.
std::optional<double> number(const base::Json& v) {
  if (v.is_number()) return v.get<double>();
  if (v.is_null()) return kNaN;
  return std::nullopt;
}

std::map<std::string, double> numeric_members(const base::Json& o, std::initializer_list<const char*> skip) {
  std::map<std::string, double> out;
  for (const auto& [k, v] : o.items()) {
    bool skipped = false;
    for (const char* s : skip) skipped = skipped || k == s;
    if (skipped) continue;
    if (auto x = number(v); x && v.is_number()) out[k] = *x;
  }
  return out;
}

}  // namespace

Record parse_record(std::string_view line) {
  std::size_t b = 0, e = line.size();
  while (b < e && (line[b] == ' ' || line[b] == '\t')) ++b;
  while (e > b && (line[e - 1] == ' ' || line[e - 1] == '\t' || line[e - 1] == '\r')) --e;
  line = line.substr(b, e - b);
  if (line.size() < 2 || line.front() != '{' || line.back() != '}' || line.size() > kMaxRecordLine ||
      line.find("\"gridrun\"") == std::string_view::npos)
    return Output{};
  base::Json o;
  try {
    o = base::parse_json(nulls_for_non_finite(line), "record");
  } catch (const std::exception& ex) {
    return BadRecord{std::string("not JSON: ") + ex.what()};
  }
  if (!o.is_object() || !o.contains("gridrun")) return Output{};
  const base::Json& kind = o["gridrun"];
  if (!kind.is_string()) return BadRecord{"\"gridrun\" must name the record: step, epoch or summary"};
  const std::string k = kind.get<std::string>();
  if (k == "step") {
    StepRecord r;
    if (!o.contains("loss")) return BadRecord{"step: no \"loss\""};
    const auto loss = number(o["loss"]);
    if (!loss) return BadRecord{"step: \"loss\" must be a number"};
    r.loss = *loss;
    if (o.contains("samples")) {
      const auto n = number(o["samples"]);
      if (!n || !std::isfinite(*n) || *n < 0) return BadRecord{"step: \"samples\" must be a number >= 0"};
      r.samples = *n;
    }
    if (o.contains("step")) {
      if (!o["step"].is_number_integer() || o["step"].get<std::int64_t>() < 0)
        return BadRecord{"step: \"step\" must be an integer >= 0"};
      r.step = o["step"].get<std::int64_t>();
    }
    r.metrics = numeric_members(o, {"gridrun", "loss", "samples", "step"});
    return r;
  }
  if (k == "epoch") {
    EpochRecord r;
    if (o.contains("epoch")) {
      if (!o["epoch"].is_number_integer() || o["epoch"].get<std::int64_t>() < 0)
        return BadRecord{"epoch: \"epoch\" must be an integer >= 0"};
      r.epoch = o["epoch"].get<std::int64_t>();
    }
    for (auto [name, field] : {std::pair{"train_loss", &r.train_loss}, std::pair{"train_acc", &r.train_acc},
                               std::pair{"test_loss", &r.test_loss}, std::pair{"test_acc", &r.test_acc}}) {
      if (!o.contains(name)) continue;
      const auto x = number(o[name]);
      if (!x) return BadRecord{std::string("epoch: \"") + name + "\" must be a number"};
      *field = *x;
    }
    r.metrics = numeric_members(o, {"gridrun", "epoch", "train_loss", "train_acc", "test_loss", "test_acc"});
    return r;
  }
  if (k == "summary") return SummaryRecord{numeric_members(o, {"gridrun"})};
  return BadRecord{"unknown record \"" + k + "\" (step, epoch or summary)"};
}

}  // namespace gridrun::exec
