// Selectors and overrides from the command line (select.hpp).
#include "gridrun/jobs/select.hpp"
#include "gridrun/jobs/grid.hpp"
#include "gridrun/jobs/suggest.hpp"

#include <algorithm>
#include <stdexcept>
#include <tuple>

#include "params.hpp"
#include "text.hpp"

namespace gridrun::jobs {

namespace {

// "unknown key 'rank'; did you mean 'ranks'?" over the parameter names and the extra keys.
std::string unknown_key(const std::string& key, const std::vector<std::string>& extra_keys) {
  std::vector<std::string> names = extra_keys;
  for (const auto& p : param_table()) names.push_back(p.name);
  std::string msg = "unknown key '" + key + "'";
  if (const std::string usual = usual_name_hint(key); !usual.empty()) return msg + ": " + usual;
  const std::string hint = detail::closest(key, names);
  if (!hint.empty()) return msg + "; did you mean '" + hint + "'?";
  std::string known;
  for (const auto& k : extra_keys) known += k + ", ";
  return msg + " (expected " + (known.empty() ? "a parameter" : known + "or a parameter") +
         ": gridrun plan --list-params)";
}

std::pair<std::string, std::string> split_key_value(const std::string& text, const std::string& flag,
                                                    const char* form) {
  const auto eq = text.find('=');
  if (eq == std::string::npos || eq == 0)
    throw std::invalid_argument(flag + " " + text + ": expected " + form);
  return {text.substr(0, eq), text.substr(eq + 1)};
}

// A key that may name a grid's own parameter (params:, issue 56): a name {KEY} could be. Only the
// grid can tell, and type its values: add_overrides and select_jobs refuse it, with the same
// "did you mean", when the grid does not declare it.
bool own_name(const std::string& key) { return detail::is_identifier(key); }

}  // namespace

bool Selector::matches(const std::string& have) const {
  if (!spec && own) {  // a recorded own parameter's text: as a number where both read as one
    double h = 0, w = 0;
    for (const auto& text : values)
      if (text == have || (detail::parse_double(have, h) && detail::parse_double(text, w) && h == w))
        return true;
    return false;
  }
  if (!spec) return std::find(values.begin(), values.end(), have) != values.end();
  Value v;
  std::string err;
  // A recorded value that does not read as the parameter's type (an older file) matches only its
  // exact text.
  if (!detail::text_to_value(*spec, have, v, err))
    return std::find(values.begin(), values.end(), have) != values.end();
  return matches(v);
}

bool Selector::matches(const JobParams& params) const {
  if (spec) return matches(get_param(params, key));
  if (!own) return false;
  const std::optional<Value> have = user_param(params, key);
  return have && matches(*have);
}

bool Selector::matches(const Value& have) const {
  if (!spec && own) {
    // Typed as the job's value is (the grid declared the type): 0.10 matches 0.1, 1 matches 1.0.
    ParamSpec as;
    as.type = std::holds_alternative<bool>(have)           ? Type::Bool
              : std::holds_alternative<std::int64_t>(have) ? Type::Int
              : std::holds_alternative<double>(have)       ? Type::Float
                                                           : Type::String;
    for (const auto& text : values) {
      Value want;
      std::string err;
      if (detail::text_to_value(as, text, want, err) && want == have) return true;
    }
    return false;
  }
  if (!spec) return matches(to_string(have));
  // A number parameter may hold an integer (a results file that stored 1.0 as 1): compare values.
  const auto* i = std::get_if<std::int64_t>(&have);
  for (const auto& want : typed) {
    if (want == have) return true;
    const auto* d = std::get_if<double>(&want);
    if (d && i && *d == static_cast<double>(*i)) return true;
  }
  return false;
}

Selector parse_selector(const std::string& text, const std::string& flag,
                        const std::vector<std::string>& extra_keys) {
  Selector s;
  s.text = text;
  std::string list;
  std::tie(s.key, list) = split_key_value(text, flag, "KEY=VALUE[,VALUE...]");
  std::size_t start = 0;
  while (true) {
    const auto comma = list.find(',', start);
    s.values.push_back(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  for (const auto& v : s.values)
    if (v.empty())
      throw std::invalid_argument(flag + " " + text + ": empty value (expected KEY=VALUE[,VALUE...])");
  if (std::find(extra_keys.begin(), extra_keys.end(), s.key) != extra_keys.end()) return s;
  s.spec = find_param(s.key);
  if (!s.spec && own_name(s.key)) {
    s.own = true;  // typed by each job's value (Selector::matches)
    return s;
  }
  if (!s.spec) throw std::invalid_argument(flag + " " + text + ": " + unknown_key(s.key, extra_keys));
  // Typed as the grid file would type them, so a selector that can never match (lr=abc) is an error
  // rather than an empty selection. Choices and ranges are not checked: a report may select jobs of
  // files written under other rules.
  for (const auto& v : s.values) {
    Value typed;
    std::string err;
    if (!detail::text_to_value(*s.spec, v, typed, err))
      throw std::invalid_argument(flag + " " + text + ": " + s.key + ": " + err);
    s.typed.push_back(std::move(typed));
  }
  return s;
}

std::vector<Selector> parse_selectors(const std::vector<std::string>& texts, const std::string& flag,
                                      const std::vector<std::string>& extra_keys) {
  std::vector<Selector> out;
  for (const auto& t : texts) out.push_back(parse_selector(t, flag, extra_keys));
  return out;
}

bool matches_all(const std::vector<Selector>& selectors,
                 const std::function<std::string(const std::string& key)>& value_of) {
  for (const auto& s : selectors)
    if (!s.matches(value_of(s.key))) return false;
  return true;
}

bool matches_all(const std::vector<Selector>& selectors, const JobParams& params, const std::string& id) {
  for (const auto& s : selectors) {
    const bool ok = s.spec || s.own ? s.matches(params) : s.key == "id" && s.matches(id);
    if (!ok) return false;
  }
  return true;
}

std::string undeclared(const Selector& s, const JobParams& any, const std::string& flag) {
  if (!s.own || user_param(any, s.key)) return "";
  return flag + " " + s.text + ": " + unknown_key(s.key, {"id"});
}

std::vector<Job> select_jobs(const std::vector<Job>& jobs, const std::vector<Selector>& selectors,
                             const std::string& flag) {
  if (!jobs.empty())
    for (const auto& s : selectors)
      if (const std::string bad = undeclared(s, jobs.front().params, flag); !bad.empty())
        throw std::invalid_argument(bad);
  std::vector<Job> out;
  for (const auto& j : jobs)
    if (matches_all(selectors, j.params, j.id)) out.push_back(j);
  if (out.empty() && !jobs.empty()) {
    std::string given;
    for (const auto& s : selectors) given += (given.empty() ? "" : " ") + flag + " " + s.text;
    throw std::invalid_argument(given + ": selects none of the grid's " + std::to_string(jobs.size()) +
                                (jobs.size() == 1 ? " job" : " jobs"));
  }
  return out;
}

std::string lost_compare_warning(const Expansion& ex, const std::vector<Job>& selected,
                                 const std::vector<Selector>& selectors) {
  const std::string& by = ex.compare_by;
  if (by.empty() || selectors.empty() || selected.empty() || !ex.compare_gone.empty()) return "";
  if (std::find(ex.varying.begin(), ex.varying.end(), by) == ex.varying.end()) return "";
  const Value first = get_param(selected.front().params, by);
  for (const auto& j : selected)
    if (get_param(j.params, by) != first) return "";
  // The selectors over the compare key are the cause; else (`--only id=...`) all of them together.
  std::string flags, all;
  for (const auto& s : selectors) {
    all += (all.empty() ? "" : " ") + std::string("--only ") + s.text;
    if (s.key == by) flags += (flags.empty() ? "" : " ") + std::string("--only ") + s.text;
  }
  return compare_gone_message(ex, flags.empty() ? all : flags);
}

std::pair<std::string, Value> parse_override(const std::string& text, const std::string& flag) {
  const auto [key, value] = split_key_value(text, flag, "KEY=VALUE");
  const ParamSpec* spec = find_param(key);
  if (!spec && own_name(key)) return {key, value};  // typed by the grid that declares it (add_overrides)
  if (!spec) throw std::invalid_argument(flag + " " + text + ": " + unknown_key(key, {}));
  try {
    return {key, parse_value(*spec, value)};  // "epochs: expected an integer, got 'x'"
  } catch (const std::invalid_argument& e) {
    throw std::invalid_argument(flag + " " + text + ": " + e.what());
  }
}

bool override_list_splits(const ParamSpec& spec) {
  return spec.type != Type::String || !spec.choices.empty();
}

std::pair<std::string, std::vector<Value>> parse_override_list(const std::string& text,
                                                               const std::string& flag) {
  const auto [key, list] = split_key_value(text, flag, "KEY=VALUE[,VALUE...]");
  const ParamSpec* spec = find_param(key);
  if (!spec && !own_name(key)) throw std::invalid_argument(flag + " " + text + ": " + unknown_key(key, {}));
  std::vector<std::string> pieces;
  if (!spec || override_list_splits(*spec)) {
    std::size_t start = 0;
    while (true) {
      const auto comma = list.find(',', start);
      pieces.push_back(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
      if (comma == std::string::npos) break;
      start = comma + 1;
    }
  } else {
    pieces.push_back(list);  // a free string: commas are part of it (mlp_hidden=512,256)
  }
  std::pair<std::string, std::vector<Value>> out{key, {}};
  for (const auto& piece : pieces) {
    if (piece.empty() && pieces.size() > 1)
      throw std::invalid_argument(flag + " " + text +
                                  ": empty value in the list (expected KEY=VALUE[,VALUE...])");
    if (!spec) {  // a grid's own parameter, maybe: its text, typed by add_overrides against the grid
      out.second.emplace_back(piece);
      continue;
    }
    try {
      out.second.push_back(parse_value(*spec, piece));  // "lr: expected a number, got 'abc'"
    } catch (const std::invalid_argument& e) {
      std::string msg = flag + " " + text + ": " + e.what();
      if (!override_list_splits(*spec) && piece.find(',') != std::string::npos)
        msg += " (a comma is part of a " + key + " value; give several values as " + flag + " " + key +
               "=A " + flag + " " + key + "=B)";
      throw std::invalid_argument(msg);
    }
  }
  return out;
}

std::vector<std::pair<std::string, Value>> parse_overrides(const std::vector<std::string>& texts,
                                                           const std::string& flag) {
  std::vector<std::pair<std::string, std::vector<Value>>> by_key;  // in order of first appearance
  for (const auto& t : texts) {
    auto parsed = parse_override_list(t, flag);
    const std::string& key = parsed.first;
    auto it = std::find_if(by_key.begin(), by_key.end(), [&](const auto& e) { return e.first == key; });
    if (it == by_key.end()) {
      by_key.emplace_back(key, std::vector<Value>{});
      it = by_key.end() - 1;
    }
    for (auto& v : parsed.second) {
      if (std::find(it->second.begin(), it->second.end(), v) != it->second.end())
        throw std::invalid_argument(flag + " " + t + ": " + key + "=" + to_string(v) + " is given twice");
      it->second.push_back(std::move(v));
    }
  }
  std::vector<std::pair<std::string, Value>> out;
  for (auto& [key, values] : by_key)
    for (auto& v : values) out.emplace_back(key, std::move(v));
  return out;
}

std::string closest_name(const std::string& word, const std::vector<std::string>& candidates) {
  return detail::closest(word, candidates);
}

std::string flag_hint(std::string typed, const std::vector<std::string>& flags) {
  typed = typed.substr(0, typed.find('='));
  if (typed.rfind("--", 0) != 0) return "";
  std::vector<std::string> names;
  for (const auto& f : flags)
    if (!f.empty()) names.push_back(f);
  const std::string hint = closest_name(typed.substr(2), names);
  return hint.empty() ? "" : "; did you mean '--" + hint + "'?";
}

}  // namespace gridrun::jobs
