// YAML grid file -> GridSpec: every key and value is checked here, in file order, so the first
// error reported is the first one in the file. Locations come from yaml-cpp's Mark (0-based, made
// 1-based here). See docs/grid.md for the format.
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <optional>
#include <set>

#include "grid_spec.hpp"
#include "gridrun/jobs/command.hpp"
#include "gridrun/jobs/grid.hpp"
#include "params.hpp"
#include "sample.hpp"
#include "text.hpp"

namespace gridrun::jobs::detail {

namespace {

const std::vector<std::string>& top_keys() {
  static const std::vector<std::string> k = {"name",    "defaults", "grid",  "zip",     "sample",
                                             "exclude", "include",  "seeds", "compare", "command",
                                             "env",     "files",    "params"};
  return k;
}

const char* kind(const YAML::Node& n) {
  switch (n.Type()) {
    case YAML::NodeType::Map: return "a map";
    case YAML::NodeType::Sequence: return "a list";
    case YAML::NodeType::Null: return "nothing";
    default: return "a scalar";
  }
}

class Parser {
 public:
  explicit Parser(GridSpec& spec) : s_(spec) {}

  int loc(const YAML::Node& n, std::string path);
  [[noreturn]] void fail(const YAML::Node& n, const std::string& path, const std::string& msg);

  // Iterates a map, rejecting duplicate keys and non-scalar keys; fn(key, keynode, value).
  template <typename Fn>
  void each_key(const YAML::Node& map, const std::string& path, Fn fn);

  // A parameter name at `keynode`, or an error with a "did you mean" hint.
  int param(const std::string& key, const YAML::Node& keynode, const std::string& path);

  // A scalar node -> typed value; `check` also applies choices and ranges.
  // `key`: where to point when the value is missing (a null node's mark is the next token's).
  Setting value(int p, const YAML::Node& n, const std::string& path, bool check = true,
                const YAML::Node* key = nullptr);

  void need(const YAML::Node& n, YAML::NodeType::value t, const std::string& path, const char* what);

  void name(const YAML::Node& n);

  // A flat map of parameter -> scalar (defaults:, an include entry).
  std::vector<Setting> settings(const YAML::Node& n, const std::string& path);

  // A list of scalars for parameter p (a grid axis, a zip column, seeds).
  std::vector<Setting> column(int p, const YAML::Node& n, const std::string& path, const YAML::Node& key);

  void grid(const YAML::Node& n);

  void zip(const YAML::Node& n);

  void seeds(const YAML::Node& n, const YAML::Node& keynode);

  // sample: {n: N, seed: S, KEY: {DIST: [...]}, ...}: n drawn points, one more axis after zip.
  void sample(const YAML::Node& n, const YAML::Node& keynode);
  Distribution distribution(int p, const YAML::Node& v, const std::string& path, const YAML::Node& key);
  // A plain integer in [lo, hi] (sample.n, sample.seed).
  long long integer(const YAML::Node& v, const std::string& path, long long lo, long long hi);

  void exclude(const YAML::Node& n);

  void include(const YAML::Node& n);

  void compare(const YAML::Node& n);

  // command: (an argv list), env: (NAME: value), files: (extra files hashed into the id).
  void command(const YAML::Node& n, const YAML::Node& key);
  void env(const YAML::Node& n, const YAML::Node& key);
  void files(const YAML::Node& n, const YAML::Node& key);
  // params: the program's own parameters, each `name: default` or `name: {default, min, max,
  // choices, help}`; read before every other section, which may use them.
  void own_params(const YAML::Node& n, const YAML::Node& key);
  ParamSpec own_param(const std::string& name, const YAML::Node& k, const YAML::Node& v);
  std::vector<std::string> own_names() const;
  // After every section: a command grid sets model, command and command_env on every job, and
  // refuses a model written anywhere.
  void command_defaults();

  // The whole file; throws every error found (throw_recorded).
  void document(const YAML::Node& root);
  void sections(const YAML::Node& root);

  // Without `name:`, the run is named after the file ("sweep.yaml" -> "sweep").
  void default_name();

  // Checks that need more than one section: a parameter on two axes, both batch keys varying.
  void cross_checks();

 private:
  // Every error of the file at once, as a compiler reports them (issue 49): each_key records the
  // error of one key and goes on with the next; document() throws them together, the first one's
  // location first. At most kMaxErrors: later ones are often consequences of earlier ones.
  static constexpr std::size_t kMaxErrors = 20;
  struct TooMany {};  // unwinds past every each_key once kMaxErrors are recorded
  void record(const GridError& e);
  [[noreturn]] void throw_recorded() const;
  std::vector<GridError> errors_;

  GridSpec& s_;
  std::vector<Axis> grid_axes_;
  Axis zip_axis_;
  Axis sample_axis_;
  std::vector<std::pair<int, int>> axis_keys_;  // (param, loc of its key) for grid, zip and sample
  int seeds_key_loc_ = -1;
};

int Parser::loc(const YAML::Node& n, std::string path) {
  const YAML::Mark m = n.Mark();  // a null node (empty document) has no mark: report 1:1
  s_.locs.push_back(m.is_null() ? Loc{1, 1, std::move(path)}
                                : Loc{m.line + 1, m.column + 1, std::move(path)});
  return static_cast<int>(s_.locs.size()) - 1;
}

void Parser::fail(const YAML::Node& n, const std::string& path, const std::string& msg) {
  s_.fail(loc(n, path), msg);
}

void Parser::record(const GridError& e) {
  errors_.push_back(e);
  if (errors_.size() >= kMaxErrors) throw TooMany{};
}

void Parser::throw_recorded() const {
  const GridError& first = errors_.front();
  if (errors_.size() == 1) throw first;
  std::string msg = first.message();
  for (std::size_t i = 1; i < errors_.size(); ++i) msg += std::string("\n") + errors_[i].what();
  msg += "\n" + std::to_string(errors_.size()) + " errors in " + s_.file +
         (errors_.size() >= kMaxErrors ? " (stopped there; fix these first)" : "");
  throw GridError(first.file(), first.line(), first.col(), first.key_path(), msg);
}

template <typename Fn>
void Parser::each_key(const YAML::Node& map, const std::string& path, Fn fn) {
  std::set<std::string> seen;
  for (const auto& kv : map) {
    try {
      const std::string where = path.empty() ? "" : path + ".";
      if (!kv.first.IsScalar()) fail(kv.first, path, "keys must be plain names");
      const std::string key = kv.first.Scalar();
      if (!seen.insert(key).second) fail(kv.first, where + key, "duplicate key");
      fn(key, kv.first, kv.second);
    } catch (const GridError& e) {
      record(e);  // and on with the next key
    }
  }
}

int Parser::param(const std::string& key, const YAML::Node& keynode, const std::string& path) {
  if (key == "user_params")
    fail(keynode, path, "the program's own parameters are declared under params: and set by name");
  int i = s_.index_of(key);
  if (i >= 0) return i;
  if (const std::string usual = usual_name_hint(key); !usual.empty())
    fail(keynode, path, "unknown parameter '" + key + "': " + usual);
  std::string hint = closest(key, own_names());
  if (hint.empty()) hint = suggest_param(key);
  fail(keynode, path,
       "unknown parameter '" + key + "'" + (hint.empty() ? "" : "; did you mean '" + hint + "'?") +
           (s_.command.argv.empty() && s_.params_loc < 0
                ? ""
                : " (your program's own are declared under params:)"));
}

Setting Parser::value(int p, const YAML::Node& n, const std::string& path, bool check,
                      const YAML::Node* key) {
  if (key && n.IsNull()) {
    const ParamSpec& s = s_.table[static_cast<std::size_t>(p)];
    fail(*key, path,
         std::string(s.type == Type::Int ? "expected an " : "expected a ") + type_name(s.type) +
             ", got nothing");
  }
  const ParamSpec& spec = s_.table[static_cast<std::size_t>(p)];
  const std::string expected =
      std::string(spec.type == Type::Int ? "expected an " : "expected a ") + type_name(spec.type);
  if (!n.IsScalar()) fail(n, path, expected + ", got " + kind(n));
  // A quoted scalar is a string in YAML: "12" for an integer parameter is a type error.
  if (spec.type != Type::String && n.Tag() == "!")
    fail(n, path, expected + ", got string \"" + n.Scalar() + "\"");
  Setting st;
  st.param = p;
  std::string err;
  if (!text_to_value(spec, n.Scalar(), st.value, err)) fail(n, path, err);
  if (check) {
    std::string bad = check_value(spec, st.value);
    if (!bad.empty()) fail(n, path, bad);
  }
  st.loc = loc(n, path);
  append_member(st.json, spec.name, st.value);
  return st;
}

void Parser::need(const YAML::Node& n, YAML::NodeType::value t, const std::string& path, const char* what) {
  if (n.Type() != t) fail(n, path, std::string("expected ") + what + ", got " + kind(n));
}

void Parser::name(const YAML::Node& n) {
  if (!n.IsScalar() || n.Scalar().empty())
    fail(n, "name", std::string("expected a run name, got ") + kind(n));
  for (char c : n.Scalar()) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-'))
      fail(n, "name", "'" + n.Scalar() + "' may only contain letters, digits, '_', '.' and '-'");
  }
  s_.name = n.Scalar();
}

std::vector<Setting> Parser::settings(const YAML::Node& n, const std::string& path) {
  need(n, YAML::NodeType::Map, path, "a map of parameter: value");
  std::vector<Setting> out;
  int batch_key = -1;
  each_key(n, path, [&](const std::string& key, const YAML::Node& k, const YAML::Node& v) {
    const std::string kp = path + "." + key;
    int p = param(key, k, kp);
    out.push_back(value(p, v, kp, true, &k));
    if (key == "batch_per_rank" || key == "global_batch") {
      if (batch_key >= 0) fail(k, kp, "give either batch_per_rank or global_batch, not both");
      batch_key = p;
    }
  });
  return out;
}

std::vector<Setting> Parser::column(int p, const YAML::Node& n, const std::string& path,
                                    const YAML::Node& key) {
  if (!n.IsSequence())
    fail(n.IsNull() ? key : n, path, std::string("expected a list of values, got ") + kind(n));
  if (n.size() == 0) fail(n, path, "empty list: the grid would have no jobs");
  std::vector<Setting> out;
  for (std::size_t i = 0; i < n.size(); ++i)
    out.push_back(value(p, n[i], path + "[" + std::to_string(i) + "]"));
  return out;
}

void Parser::grid(const YAML::Node& n) {
  need(n, YAML::NodeType::Map, "grid", "a map of parameter: [values]");
  each_key(n, "grid", [&](const std::string& key, const YAML::Node& k, const YAML::Node& v) {
    const std::string kp = "grid." + key;
    int p = param(key, k, kp);
    Axis a;
    a.params = {p};
    for (auto& st : column(p, v, kp, k)) a.points.push_back({st});
    grid_axes_.push_back(std::move(a));
    axis_keys_.emplace_back(p, loc(k, kp));
  });
}

void Parser::zip(const YAML::Node& n) {
  need(n, YAML::NodeType::Map, "zip", "a map of parameter: [values]");
  Axis a;
  std::string first_key;
  each_key(n, "zip", [&](const std::string& key, const YAML::Node& k, const YAML::Node& v) {
    const std::string kp = "zip." + key;
    int p = param(key, k, kp);
    auto col = column(p, v, kp, k);
    if (a.params.empty()) {
      first_key = key;
      a.points.resize(col.size());
    } else if (col.size() != a.points.size()) {
      fail(v, kp,
           std::to_string(col.size()) + " values, but zip." + first_key + " has " +
               std::to_string(a.points.size()) + "; zip lists must have equal length");
    }
    a.params.push_back(p);
    for (std::size_t i = 0; i < col.size(); ++i) a.points[i].push_back(col[i]);
    axis_keys_.emplace_back(p, loc(k, kp));
  });
  if (!a.params.empty()) zip_axis_ = std::move(a);
}

void Parser::seeds(const YAML::Node& n, const YAML::Node& keynode) {
  int p = param_index("seed");
  s_.has_seeds = true;
  s_.seeds.params = {p};
  for (auto& st : column(p, n, "seeds", keynode)) s_.seeds.points.push_back({st});
  seeds_key_loc_ = loc(keynode, "seeds");
}

// The most points one sample: draws (a typo such as 1e9, not an experiment).
constexpr long long kMaxSamplePoints = 100'000;

long long Parser::integer(const YAML::Node& v, const std::string& path, long long lo, long long hi) {
  const std::string text = v.IsScalar() ? v.Scalar() : "";
  long long x = 0;
  char* end = nullptr;
  errno = 0;
  if (v.IsScalar() && v.Tag() != "!" && !text.empty()) x = std::strtoll(text.c_str(), &end, 10);
  if (!v.IsScalar() || v.Tag() == "!" || text.empty() || *end != '\0' || errno == ERANGE || x < lo || x > hi)
    fail(v, path,
         "expected an integer from " + std::to_string(lo) + " to " + std::to_string(hi) + ", got " +
             (v.IsScalar() ? "'" + text + "'" : kind(v)));
  return x;
}

// One sampled parameter's {DIST: [...]}: the distribution fits the parameter's type, its bounds
// are values of the parameter (type and range checked as anywhere else) with low < high, a log
// scale starts above 0, and a choice lists two or more different values.
Distribution Parser::distribution(int p, const YAML::Node& v, const std::string& path,
                                  const YAML::Node& key) {
  const ParamSpec& spec = s_.table[static_cast<std::size_t>(p)];
  const std::string example = spec.type == Type::Float ? "{loguniform: [0.0001, 0.1]}"
                              : spec.type == Type::Int ? "{randint: [1, 8]}"
                                                       : "{choice: [A, B]}";
  if (v.IsSequence())
    fail(v, path, "expected a distribution such as " + example + "; a list of values is {choice: [...]}");
  if (!v.IsMap() || v.size() != 1)
    fail(v.IsNull() ? key : v, path,
         "expected one distribution such as " + example +
             " (uniform, loguniform, randint, lograndint or choice), got " +
             (v.IsMap() ? std::to_string(v.size()) + " keys" : std::string(kind(v))));
  const auto entry = v.begin();
  const std::string name = entry->first.IsScalar() ? entry->first.Scalar() : "";
  const YAML::Node args = entry->second;
  const auto& names = dist_names();
  const auto found = std::find(names.begin(), names.end(), name);
  if (found == names.end()) {
    const std::string hint = closest(name, names);
    fail(entry->first, path,
         "unknown distribution '" + name + "'" +
             (hint.empty() ? "; expected uniform, loguniform, randint, lograndint or choice"
                           : "; did you mean '" + hint + "'?"));
  }
  Distribution d;
  d.kind = static_cast<Dist>(found - names.begin());
  const std::string at = path + "." + name;
  const bool real = d.kind == Dist::Uniform || d.kind == Dist::LogUniform;
  const bool whole = d.kind == Dist::RandInt || d.kind == Dist::LogRandInt;
  if ((real && spec.type != Type::Float) || (whole && spec.type != Type::Int)) {
    const std::string fits = spec.type == Type::Float ? "uniform or loguniform (or choice)"
                             : spec.type == Type::Int ? "randint or lograndint (or choice)"
                                                      : "choice";
    fail(entry->first, at,
         name + " does not fit '" + spec.name + "', " + (spec.type == Type::Int ? "an " : "a ") +
             type_name(spec.type) + ": sample it with " + fits);
  }
  if (!args.IsSequence())
    fail(args.IsNull() ? entry->first : args, at,
         std::string("expected a list (") + (d.kind == Dist::Choice ? "[A, B, ...]" : "[low, high]") +
             "), got " + kind(args));
  if (d.kind == Dist::Choice) {
    if (args.size() < 2)
      fail(args, at, "choose from two or more values (one value is a constant: defaults:)");
    for (std::size_t i = 0; i < args.size(); ++i) {
      Value x = value(p, args[i], at + "[" + std::to_string(i) + "]").value;
      if (std::find(d.choices.begin(), d.choices.end(), x) != d.choices.end())
        fail(args[i], at + "[" + std::to_string(i) + "]", to_string(x) + " is listed twice");
      d.choices.push_back(std::move(x));
    }
    return d;
  }
  if (args.size() != 2)
    fail(args, at, "expected [low, high], got " + std::to_string(args.size()) + " values");
  const Value lo = value(p, args[0], at + "[0]").value, hi = value(p, args[1], at + "[1]").value;
  auto number = [](const Value& x) {
    const auto* i = std::get_if<std::int64_t>(&x);
    return i ? static_cast<double>(*i) : std::get<double>(x);
  };
  d.low = number(lo);
  d.high = number(hi);
  if (whole) {
    d.int_low = std::get<std::int64_t>(lo);
    d.int_high = std::get<std::int64_t>(hi);
  }
  if (whole ? d.int_low >= d.int_high : !(d.low < d.high))
    fail(args, at, "low " + to_string(lo) + " must be below high " + to_string(hi));
  if (!std::isfinite(d.high - d.low))
    fail(args, at, "the range is too wide to sample (high - low overflows)");
  if ((d.kind == Dist::LogUniform || d.kind == Dist::LogRandInt) && d.low <= 0)
    fail(args[0], at + "[0]", name + " needs low > 0 (a log scale has no 0), got " + to_string(lo));
  return d;
}

void Parser::sample(const YAML::Node& n, const YAML::Node& keynode) {
  need(n, YAML::NodeType::Map, "sample", "a map such as {n: 8, seed: 1, lr: {loguniform: [0.0001, 0.1]}}");
  struct Sampled {
    int param;
    Distribution dist;
    int loc;
  };
  std::vector<Sampled> sampled;
  long long count = 0;
  bool has_count = false;
  long long seed = 0;
  const std::size_t errors_before = errors_.size();
  each_key(n, "sample", [&](const std::string& key, const YAML::Node& k, const YAML::Node& v) {
    const std::string kp = "sample." + key;
    if (key == "n") {
      has_count = true;
      count = integer(v, kp, 1, kMaxSamplePoints);
      return;
    }
    if (key == "seed") {  // the generator's seed, not the jobs' (seeds: gives those)
      seed = integer(v, kp, 0, std::numeric_limits<long long>::max());
      return;
    }
    static const std::vector<std::string> counts = {"num_samples", "samples", "n_trials", "trials", "count"};
    if (std::find(counts.begin(), counts.end(), key) != counts.end())
      fail(k, kp, "unknown key '" + key + "': gridrun calls the number of points 'n'");
    const int p = param(key, k, kp);
    Distribution d = distribution(p, v, kp, k);
    sampled.push_back({p, std::move(d), loc(v, kp)});
    axis_keys_.emplace_back(p, loc(k, kp));
  });
  if (errors_.size() != errors_before) return;  // reported; drawing would only add consequences
  if (sampled.empty())
    fail(keynode, "sample", "names no parameter to sample; add one such as lr: {loguniform: [0.0001, 0.1]}");
  if (!has_count) fail(keynode, "sample", "needs n: (how many points to draw)");
  Axis a;
  a.points.resize(static_cast<std::size_t>(count));
  for (const Sampled& sp : sampled) {
    const std::string& name = s_.table[static_cast<std::size_t>(sp.param)].name;
    const Loc at = s_.locs[static_cast<std::size_t>(sp.loc)];
    const std::vector<Value> values =
        draw_values(sp.dist, static_cast<std::uint64_t>(seed), name, static_cast<std::size_t>(count));
    a.params.push_back(sp.param);
    for (std::size_t i = 0; i < values.size(); ++i) {
      Setting st;
      st.param = sp.param;
      st.value = values[i];
      // Problems of a point's value (a combination check) name the point: sample[3].lr.
      s_.locs.push_back(Loc{at.line, at.col, "sample[" + std::to_string(i) + "]." + name});
      st.loc = static_cast<int>(s_.locs.size()) - 1;
      append_member(st.json, name, st.value);
      a.points[i].push_back(std::move(st));
    }
  }
  sample_axis_ = std::move(a);
}

void Parser::exclude(const YAML::Node& n) {
  if (!n.IsSequence()) fail(n, "exclude", std::string("expected a list of maps, got ") + kind(n));
  for (std::size_t i = 0; i < n.size(); ++i) {
    const std::string path = "exclude[" + std::to_string(i) + "]";
    const YAML::Node e = n[i];
    need(e, YAML::NodeType::Map, path, "a map of parameter: value");
    if (e.size() == 0) fail(e, path, "an empty entry would exclude every job");
    ExcludeEntry ex;
    ex.loc = loc(e, path);
    each_key(e, path, [&](const std::string& key, const YAML::Node& k, const YAML::Node& v) {
      const std::string kp = path + "." + key;
      int p = param(key, k, kp);
      std::vector<Value> any;
      // A list means "any of these"; values are type- and name-checked but not range-checked,
      // since excluding an impossible value is harmless.
      if (v.IsSequence()) {
        for (std::size_t j = 0; j < v.size(); ++j)
          any.push_back(value(p, v[j], kp + "[" + std::to_string(j) + "]", false).value);
        if (any.empty()) fail(v, kp, "empty list matches nothing");
      } else {
        any.push_back(value(p, v, kp, false, &k).value);
      }
      for (const auto& val : any) {
        const ParamSpec& spec = s_.table[static_cast<std::size_t>(p)];
        if (!spec.choices.empty()) {
          std::string bad = check_value(spec, val);
          if (!bad.empty()) fail(v, kp, bad);
        }
      }
      ex.match.emplace_back(p, std::move(any));
    });
    s_.excludes.push_back(std::move(ex));
  }
}

void Parser::include(const YAML::Node& n) {
  if (!n.IsSequence()) fail(n, "include", std::string("expected a list of maps, got ") + kind(n));
  for (std::size_t i = 0; i < n.size(); ++i) {
    const std::string path = "include[" + std::to_string(i) + "]";
    IncludeEntry inc;
    inc.loc = loc(n[i], path);
    inc.settings = settings(n[i], path);
    s_.includes.push_back(std::move(inc));
  }
}

void Parser::compare(const YAML::Node& n) {
  need(n, YAML::NodeType::Map, "compare", "a map such as {by: device}");
  const std::size_t errors_before = errors_.size();
  each_key(n, "compare", [&](const std::string& key, const YAML::Node& k, const YAML::Node& v) {
    if (key == "repeats") {
      long long r = 0;
      char* end = nullptr;
      const std::string text = v.IsScalar() ? v.Scalar() : "";
      if (v.IsScalar() && v.Tag() != "!") r = std::strtoll(text.c_str(), &end, 10);
      if (!v.IsScalar() || v.Tag() == "!" || text.empty() || *end != '\0' || r < 1 || r > kMaxRepeats)
        fail(v, "compare.repeats",
             "expected an integer from 1 to " + std::to_string(kMaxRepeats) + ", got " +
                 (v.IsScalar() ? "'" + text + "'" : kind(v)));
      s_.compare_repeats = static_cast<int>(r);
      s_.compare_repeats_loc = loc(v, "compare.repeats");
      return;
    }
    if (key == "order") {
      if (!v.IsScalar() || (v.Scalar() != "alternate" && v.Scalar() != "random" && v.Scalar() != "blocked"))
        fail(v, "compare.order",
             "expected alternate (A B B A ...), random (a seeded shuffle per repeat) or blocked (A A B B: no "
             "interleaving, to compare against), got " +
                 (v.IsScalar() ? "'" + v.Scalar() + "'" : kind(v)));
      s_.compare_order = v.Scalar();
      return;
    }
    if (key != "by") {
      std::string hint = closest(key, {"by", "repeats", "order"});
      fail(k, "compare." + key,
           "unknown key '" + key + "'" +
               (hint.empty() ? "; expected by, repeats or order" : "; did you mean '" + hint + "'?"));
    }
    if (!v.IsScalar()) fail(v, "compare.by", std::string("expected a parameter name, got ") + kind(v));
    param(v.Scalar(), v, "compare.by");
    s_.compare_by = v.Scalar();
    s_.compare_by_loc = loc(v, "compare.by");
  });
  // A bad `by:` was reported already; "expected by" would only repeat it.
  if (s_.compare_by.empty() && errors_.size() == errors_before)
    fail(n, "compare", "expected 'by: KEY' (the parameter whose values are compared)");
}

void Parser::document(const YAML::Node& root) {
  try {
    sections(root);
  } catch (const TooMany&) {
  } catch (const GridError& e) {
    errors_.push_back(e);
  }
  if (!errors_.empty()) throw_recorded();
}

void Parser::sections(const YAML::Node& root) {
  if (!root.IsMap())
    fail(root, "",
         std::string("expected a map with name, defaults, grid, ... at the top, got ") + kind(root));
  s_.root_loc = loc(root, "");
  for (const auto& kv : root)  // params: first, wherever it is written: the other sections use it
    if (kv.first.IsScalar() && kv.first.Scalar() == "params") {
      try {
        own_params(kv.second, kv.first);
      } catch (const GridError& e) {
        record(e);
      }
    }
  bool has_grid = false, has_zip = false, has_sample = false, has_include = false;
  each_key(root, "", [&](const std::string& key, const YAML::Node& k, const YAML::Node& v) {
    if (key == "params") return;  // read above
    if (key == "name") {
      name(v);
    } else if (key == "defaults") {
      s_.defaults = settings(v, "defaults");
    } else if (key == "grid") {
      has_grid = true;
      s_.product_loc = loc(k, "grid");
      grid(v);
    } else if (key == "zip") {
      has_zip = true;
      if (s_.product_loc < 0 || !has_grid) s_.product_loc = loc(k, "zip");
      zip(v);
    } else if (key == "sample") {
      has_sample = true;
      if (!has_grid && !has_zip) s_.product_loc = loc(k, "sample");
      sample(v, k);
    } else if (key == "exclude") {
      exclude(v);
    } else if (key == "include") {
      has_include = true;
      include(v);
    } else if (key == "seeds") {
      seeds(v, k);
    } else if (key == "compare") {
      compare(v);
    } else if (key == "command") {
      command(v, k);
    } else if (key == "env") {
      env(v, k);
    } else if (key == "files") {
      files(v, k);
    } else {
      std::string msg = "unknown key '" + key + "'";
      if (param_index(key) >= 0) {
        msg += "; parameters go under defaults: or grid:";
      } else {
        std::string hint = closest(key, top_keys());
        if (!hint.empty())
          msg += "; did you mean '" + hint + "'?";
        else
          msg +=
              "; expected one of name, defaults, grid, zip, sample, exclude, include, seeds, compare, "
              "command, env, files, params";
      }
      fail(k, key, msg);
    }
  });
  if (s_.name.empty()) default_name();
  cross_checks();
  command_defaults();
  s_.axes = std::move(grid_axes_);
  if (zip_axis_.params.size()) s_.axes.push_back(std::move(zip_axis_));
  if (sample_axis_.params.size()) s_.axes.push_back(std::move(sample_axis_));
  s_.has_product = has_grid || has_zip || has_sample || !has_include;
  if (s_.product_loc < 0) s_.product_loc = s_.has_seeds ? seeds_key_loc_ : s_.root_loc;
}

void Parser::command(const YAML::Node& n, const YAML::Node& key) {
  s_.command.loc = loc(key, "command");
  if (!n.IsSequence() || n.size() == 0)
    fail(n.IsNull() ? key : n, "command",
         std::string("expected the program's arguments as a list, such as [python3, train.py, --lr, "
                     "\"{lr}\"], got ") +
             kind(n));
  for (std::size_t i = 0; i < n.size(); ++i) {
    const std::string path = "command[" + std::to_string(i) + "]";
    const YAML::Node& a = n[i];
    if (!a.IsScalar()) fail(a, path, std::string("expected a string, got ") + kind(a));
    const int l = loc(a, path);
    std::string problem;
    for (const auto& name : placeholders(a.Scalar(), &problem)) {
      if (known_placeholder(name) || s_.index_of(name) >= 0) continue;
      std::string hint = closest(name, own_names());
      if (hint.empty()) hint = suggest_param(name);
      s_.fail(l, "'{" + name + "}' is no parameter" + (hint.empty() ? "" : "; did you mean {" + hint + "}?") +
                     " (placeholders: the job's parameters, {id}, {run}; {{ and }} for braces)");
    }
    if (!problem.empty()) s_.fail(l, problem);
    s_.command.argv.push_back(a.Scalar());
    s_.command.arg_locs.push_back(l);
  }
}

std::vector<std::string> Parser::own_names() const {
  std::vector<std::string> out;
  for (std::size_t k = param_table().size(); k < s_.table.size(); ++k) out.push_back(s_.table[k].name);
  return out;
}

void Parser::own_params(const YAML::Node& n, const YAML::Node& key) {
  s_.params_loc = loc(key, "params");
  need(n, YAML::NodeType::Map, "params",
       "a map of name: default, such as {dropout: 0.1, warmup_ratio: {default: 0.0, min: 0, max: 1}}");
  each_key(n, "params", [&](const std::string& name, const YAML::Node& k, const YAML::Node& v) {
    s_.table.push_back(own_param(name, k, v));
  });
}

// One declared parameter. Its type is the default's as YAML writes it (0.1 a number, 3 an integer,
// true a bool, cosine or "3" a string) unless type: says otherwise; then every value given for it
// anywhere in the grid is checked against type, range and choices as gridrun's own are.
ParamSpec Parser::own_param(const std::string& name, const YAML::Node& k, const YAML::Node& v) {
  const std::string path = "params." + name;
  if (!is_identifier(name))
    fail(k, path,
         "'" + name + "' is no parameter name (letters, digits and _, so that {" + name + "} works)");
  if (param_index(name) >= 0)
    fail(k, path,
         "'" + name + "' is one of gridrun's parameters: set it under defaults: or grid:, do not declare it");
  if (known_placeholder(name))
    fail(k, path, "{" + name + "} is filled in by gridrun itself; choose another name");
  ParamSpec spec;
  spec.name = name;
  spec.help = "the program's own parameter (params:)";
  // Copies, never assigned to: yaml-cpp's Node::operator= writes through to the node referred to.
  std::optional<YAML::Node> def, type, lo, hi, choices;
  if (!v.IsMap()) {
    def.emplace(v);
  } else {
    static const std::vector<std::string> fields = {"default", "type", "min", "max", "choices", "help"};
    for (const auto& f : v) {
      const std::string field = f.first.IsScalar() ? f.first.Scalar() : "";
      const std::string at = path + "." + field;
      if (field == "default") {
        def.emplace(f.second);
      } else if (field == "type") {
        type.emplace(f.second);
      } else if (field == "min") {
        lo.emplace(f.second);
      } else if (field == "max") {
        hi.emplace(f.second);
      } else if (field == "choices") {
        choices.emplace(f.second);
      } else if (field == "help") {
        if (!f.second.IsScalar())
          fail(f.second, at, std::string("expected a line of text, got ") + kind(f.second));
        spec.help = f.second.Scalar();
      } else {
        const std::string hint = closest(field, fields);
        fail(f.first, at,
             "unknown key '" + field + "'" +
                 (hint.empty() ? "; expected default, type, min, max, choices or help"
                               : "; did you mean '" + hint + "'?"));
      }
    }
    if (!def || def->IsNull()) fail(k, path, "needs default: (the value of a job that sets none)");
  }
  if (!def->IsScalar())
    fail(def->IsNull() ? k : *def, path,
         std::string("expected the default value (a number, bool or string), got ") + kind(*def));
  if (type) {
    const std::string t = type->IsScalar() ? type->Scalar() : "";
    if (t == "bool")
      spec.type = Type::Bool;
    else if (t == "int" || t == "integer")
      spec.type = Type::Int;
    else if (t == "float" || t == "number")
      spec.type = Type::Float;
    else if (t == "string" || t == "str")
      spec.type = Type::String;
    else
      fail(*type, path + ".type", "expected bool, int, float or string, got '" + t + "'");
  } else {
    const std::string& text = def->Scalar();
    bool b = false;
    std::int64_t i = 0;
    double d = 0;
    spec.type = def->Tag() == "!"       ? Type::String
                : parse_bool(text, b)   ? Type::Bool
                : parse_int(text, i)    ? Type::Int
                : parse_double(text, d) ? Type::Float
                                        : Type::String;
  }
  const bool number = spec.type == Type::Int || spec.type == Type::Float;
  auto bound = [&](const std::optional<YAML::Node>& b, const char* which) -> std::optional<double> {
    if (!b) return std::nullopt;
    double x = 0;
    if (!number)
      fail(*b, path + "." + which,
           std::string(which) + " applies to a number, and '" + name + "' is a " + type_name(spec.type));
    if (!b->IsScalar() || !parse_double(b->Scalar(), x))
      fail(*b, path + "." + which,
           std::string("expected a number, got ") + (b->IsScalar() ? "'" + b->Scalar() + "'" : kind(*b)));
    return x;
  };
  spec.min = bound(lo, "min");
  spec.max = bound(hi, "max");
  if (spec.min && spec.max && *spec.min > *spec.max)
    fail(*lo, path + ".min", "min " + format_double(*spec.min) + " is above max " + format_double(*spec.max));
  if (choices) {
    if (spec.type != Type::String)
      fail(*choices, path + ".choices",
           "choices apply to a string, and '" + name + "' is a " + type_name(spec.type) +
               " (use min and max)");
    if (!choices->IsSequence() || choices->size() < 2)
      fail(*choices, path + ".choices", "expected a list of two or more names");
    for (const auto& c : *choices) {
      if (!c.IsScalar()) fail(c, path + ".choices", std::string("expected a name, got ") + kind(c));
      spec.choices.push_back(c.Scalar());
    }
  }
  Value value;
  std::string err;
  if (spec.type != Type::String && def->Tag() == "!")
    fail(*def, path,
         std::string("the default of a ") + type_name(spec.type) + " is written without quotes, got \"" +
             def->Scalar() + "\"");
  if (!text_to_value(spec, def->Scalar(), value, err)) fail(*def, path, "default: " + err);
  if (const std::string bad = check_value(spec, value); !bad.empty()) fail(*def, path, "default: " + bad);
  spec.default_value = std::move(value);
  return spec;
}

void Parser::env(const YAML::Node& n, const YAML::Node& key) {
  s_.command.env_loc = loc(key, "env");
  need(n, YAML::NodeType::Map, "env", "a map of NAME: value");
  // What gridrun-exec sets itself: a grid may not change it (docs/own-script.md).
  static const std::set<std::string> reserved = {
      "RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE", "MASTER_ADDR", "MASTER_PORT"};
  each_key(n, "env", [&](const std::string& name, const YAML::Node& k, const YAML::Node& v) {
    const std::string path = "env." + name;
    if (!is_identifier(name))
      fail(k, path, "'" + name + "' is no environment variable name (letters, digits, _)");
    if (reserved.count(name) || name.rfind("GRIDRUN_", 0) == 0)
      fail(k, path, name + " is set by gridrun for every rank (docs/own-script.md)");
    if (!v.IsScalar()) fail(v.IsNull() ? k : v, path, std::string("expected a string, got ") + kind(v));
    s_.command.env.emplace_back(name, v.Scalar());
  });
}

void Parser::files(const YAML::Node& n, const YAML::Node& key) {
  s_.command.files_loc = loc(key, "files");
  need(n, YAML::NodeType::Sequence, "files", "a list of files whose content is part of the job id");
  for (std::size_t i = 0; i < n.size(); ++i) {
    const std::string path = "files[" + std::to_string(i) + "]";
    if (!n[i].IsScalar()) fail(n[i], path, std::string("expected a file name, got ") + kind(n[i]));
    s_.command.files.push_back(n[i].Scalar());
    s_.command.file_locs.push_back(loc(n[i], path));
  }
}

void Parser::command_defaults() {
  CommandSpec& c = s_.command;
  if (c.argv.empty()) {
    if (s_.params_loc >= 0)
      s_.fail(s_.params_loc,
              "params: declares your own program's parameters: a command: grid only (gridrun-train's are "
              "fixed: gridrun plan --list-params)");
    if (c.env_loc >= 0) s_.fail(c.env_loc, "env: applies to a command: grid only (your own program)");
    if (c.files_loc >= 0) s_.fail(c.files_loc, "files: applies to a command: grid only (your own program)");
    return;
  }
  const int model = param_index("model");
  const std::string at = "command: at " + std::to_string(s_.locs[static_cast<std::size_t>(c.loc)].line) +
                         ":" + std::to_string(s_.locs[static_cast<std::size_t>(c.loc)].col);
  auto refuse = [&](int l) {
    s_.fail(l, "a command job runs your program, not a model: leave model out (" + at + ")");
  };
  for (const auto& st : s_.defaults)
    if (st.param == model) refuse(st.loc);
  for (const auto& [p, l] : axis_keys_)
    if (p == model) refuse(l);
  for (const auto& inc : s_.includes)
    for (const auto& st : inc.settings)
      if (st.param == model) refuse(st.loc);
  auto add = [&](const char* name, std::string v, int l) {
    Setting st;
    st.param = param_index(name);
    st.value = std::move(v);
    st.loc = l;
    append_member(st.json, name, st.value);
    s_.defaults.push_back(std::move(st));
  };
  add("model", "command", c.loc);
  add("command", command_to_json(c.argv), c.loc);
  if (!c.env.empty()) add("command_env", env_to_json(c.env), c.env_loc);
}

void Parser::default_name() {
  std::string stem = s_.file;
  auto slash = stem.find_last_of('/');
  if (slash != std::string::npos) stem = stem.substr(slash + 1);
  auto dot = stem.find_last_of('.');
  if (dot != std::string::npos && dot > 0) stem = stem.substr(0, dot);
  bool ok = !stem.empty();
  for (char c : stem)
    ok = ok && (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.' || c == '-');
  if (!ok) {
    s_.locs.push_back(Loc{1, 1, "name"});
    s_.fail(static_cast<int>(s_.locs.size()) - 1,
            "missing, and the file name '" + stem + "' is no valid run name; add name:");
  }
  s_.name = stem;
}

void Parser::cross_checks() {
  std::vector<int> seen(s_.table.size(), -1);
  int batch = -1;
  for (const auto& [p, l] : axis_keys_) {
    const std::string& name = s_.table[static_cast<std::size_t>(p)].name;
    if (seen[static_cast<std::size_t>(p)] >= 0)
      s_.fail(l, "'" + name + "' is already varied at " +
                     s_.locs[static_cast<std::size_t>(seen[static_cast<std::size_t>(p)])].path +
                     "; a parameter can be on one axis only");
    seen[static_cast<std::size_t>(p)] = l;
    if (name == "batch_per_rank" || name == "global_batch") {
      if (batch >= 0)
        s_.fail(l, "vary either batch_per_rank or global_batch, not both (other one at " +
                       s_.locs[static_cast<std::size_t>(batch)].path + ")");
      batch = l;
    }
  }
  const int seed = param_index("seed");
  if (s_.has_seeds && seen[static_cast<std::size_t>(seed)] >= 0)
    s_.fail(seeds_key_loc_, "'seed' is also varied at " +
                                s_.locs[static_cast<std::size_t>(seen[static_cast<std::size_t>(seed)])].path +
                                "; use one of them");
}

}  // namespace

int GridSpec::index_of(const std::string& name) const {
  const int i = param_index(name);
  if (i >= 0) return i;
  for (std::size_t k = param_table().size(); k < table.size(); ++k)
    if (table[k].name == name) return static_cast<int>(k);
  return -1;
}

void GridSpec::fail(int l, const std::string& message) const {
  const Loc& at = l >= 0 ? locs[static_cast<std::size_t>(l)] : Loc{1, 1, ""};
  throw GridError(file, at.line, at.col, at.path, message);
}

std::string GridSpec::warning(int l, const std::string& message) const {
  const Loc& at = l >= 0 ? locs[static_cast<std::size_t>(l)] : Loc{1, 1, ""};
  return file + ":" + std::to_string(at.line) + ":" + std::to_string(at.col) + ": " +
         (at.path.empty() ? "" : at.path + ": ") + message;
}

GridSpec parse_grid(const std::string& yaml_text, const std::string& file) {
  GridSpec spec;
  spec.file = file;
  YAML::Node root;
  try {
    root = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    throw GridError(file, e.mark.line + 1, e.mark.column + 1, "", "YAML syntax error: " + e.msg);
  } catch (const YAML::Exception& e) {
    throw GridError(file, e.mark.line + 1, e.mark.column + 1, "", "cannot read YAML: " + e.msg);
  }
  Parser(spec).document(root);
  return spec;
}

}  // namespace gridrun::jobs::detail
