// The parameter table, typed/untyped conversions, canonical JSON and job ids.
//
// Why the id is a hash of canonical JSON: the canonical form sorts keys and spells every number
// one way (see text.hpp), so the id depends only on the resolved parameter values, never on how a
// grid file wrote them. The hash is MurmurHash64A (seed 0, little-endian blocks); the id is its top
// 48 bits as 12 lowercase hex characters. Changing either changes every id: don't.
#include "gridrun/jobs/params.hpp"

#include <algorithm>
#include <cctype>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <type_traits>
#include <unordered_map>

#include "params.hpp"
#include "text.hpp"

namespace gridrun::jobs {

namespace {

// The closed sets of names (Device, Task, Precision) are a name in a grid, a job file and an
// attribute (a String with the enum's names as its choices), and the enum in JobParams: these
// traits and helpers are the one place the two meet.
template <typename T>
struct NamedEnum : std::false_type {};
template <>
struct NamedEnum<Device> : std::true_type {
  static constexpr const auto& all = base::kDevices;
  static const char* name(Device d) { return base::device_name(d); }
  static std::optional<Device> parse(std::string_view s) { return base::parse_device(s); }
};
template <>
struct NamedEnum<Task> : std::true_type {
  static constexpr const auto& all = base::kTasks;
  static const char* name(Task t) { return base::task_name(t); }
  static std::optional<Task> parse(std::string_view s) { return base::parse_task(s); }
};
template <>
struct NamedEnum<Precision> : std::true_type {
  static constexpr const auto& all = base::kPrecisions;
  static const char* name(Precision p) { return base::precision_name(p); }
  static std::optional<Precision> parse(std::string_view s) { return base::parse_precision(s); }
};

// The parameter type of a JobParams field's C++ type.
template <typename T>
constexpr Type type_of() {
  if constexpr (std::is_same_v<T, bool>) {
    return Type::Bool;
  } else if constexpr (std::is_same_v<T, std::int64_t>) {
    return Type::Int;
  } else if constexpr (std::is_same_v<T, double>) {
    return Type::Float;
  } else {
    static_assert(std::is_same_v<T, std::string> || NamedEnum<T>::value, "not a parameter type");
    return Type::String;
  }
}

template <typename T>
Value to_value(const T& v) {
  if constexpr (NamedEnum<T>::value) {
    return Value{std::string(NamedEnum<T>::name(v))};
  } else {
    return Value{v};
  }
}

// The field of a Value of its own type (a name of the set for a closed set); false for another.
template <typename T>
bool from_value(const Value& v, T& out) {
  if constexpr (NamedEnum<T>::value) {
    const auto* s = std::get_if<std::string>(&v);
    const std::optional<T> x = s ? NamedEnum<T>::parse(*s) : std::nullopt;
    if (x) out = *x;
    return x.has_value();
  } else {
    if (const T* x = std::get_if<T>(&v)) {
      out = *x;
      return true;
    }
    return false;
  }
}

// A value of the expander's vector, which the table's checks already made valid.
template <typename T>
T value_as(const Value& v) {
  T out{};
  if (!from_value(v, out)) throw std::invalid_argument("job parameter value of the wrong type");
  return out;
}

template <typename T>
std::vector<std::string> choices_of(std::vector<std::string> listed) {
  if constexpr (NamedEnum<T>::value) {
    listed.clear();
    for (T x : NamedEnum<T>::all) listed.emplace_back(NamedEnum<T>::name(x));
  }
  return listed;
}

ParamSpec row(std::string name, Type t, Value def, std::string help, std::vector<std::string> choices,
              std::optional<double> min, std::optional<double> max, unsigned flags) {
  ParamSpec p{std::move(name), t, std::move(def), std::move(help), std::move(choices), min, max};
  p.min_exclusive = (flags & kMinExclusive) != 0;
  p.id_omits_default = (flags & kIdOmitsDefault) != 0;
  p.not_in_id = (flags & kNotInId) != 0;
  return p;
}

// params.def's "(a, b)" columns: a list of names, an optional bound.
#define GRIDRUN_LIST(...) \
  std::vector<std::string> { __VA_ARGS__ }
#define GRIDRUN_BOUND(...) \
  std::optional<double> { __VA_ARGS__ }

std::vector<ParamSpec> build_table() {
  return {
#define GRIDRUN_PARAM(name, type, def, help, choices, min, max, flags)                           \
  row(#name, type_of<type>(), to_value(type(def)), help, choices_of<type>(GRIDRUN_LIST choices), \
      GRIDRUN_BOUND min, GRIDRUN_BOUND max, flags),
#include "gridrun/jobs/params.def"
#undef GRIDRUN_PARAM
  };
}

#undef GRIDRUN_LIST
#undef GRIDRUN_BOUND

// name -> index, built once next to the table.
const std::unordered_map<std::string, int>& index_map() {
  static const std::unordered_map<std::string, int> m = [] {
    std::unordered_map<std::string, int> r;
    const auto& t = param_table();
    for (std::size_t i = 0; i < t.size(); ++i) r.emplace(t[i].name, static_cast<int>(i));
    return r;
  }();
  return m;
}

std::string quote(const std::string& s) { return "'" + s + "'"; }

std::string value_text(const Value& v) {
  if (auto s = std::get_if<std::string>(&v)) return quote(*s);
  return to_string(v);
}

std::string number_text(double d) {
  if (d == std::floor(d) && std::fabs(d) < 1e15) return std::to_string(static_cast<long long>(d));
  return to_string(Value{d});
}

template <typename T>
void get_field(const Params& p, const char* name, T& out) {
  auto it = p.find(name);
  if (it == p.end()) throw std::invalid_argument(std::string("job parameters lack '") + name + "'");
  if (from_value(it->second, out)) return;
  throw std::invalid_argument(std::string("job parameter '") + name + "' has the wrong type");
}

}  // namespace

const std::vector<ParamSpec>& param_table() {
  static const std::vector<ParamSpec> table = build_table();
  return table;
}

const ParamSpec* find_param(const std::string& name) {
  int i = detail::param_index(name);
  return i < 0 ? nullptr : &param_table()[static_cast<std::size_t>(i)];
}

std::string suggest_param(const std::string& name) {
  std::vector<std::string> names;
  for (const auto& p : param_table()) names.push_back(p.name);
  return detail::closest(name, names);
}

std::string usual_name_hint(const std::string& name) {
  std::string k;  // lower case, without '-', '_' and spaces: batch_size, batchSize, batch-size alike
  for (char c : name)
    if (c != '_' && c != '-' && c != ' ') k += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  static const std::vector<std::pair<std::vector<const char*>, const char*>> kUsual = {
      {{"learningrate", "lrate", "eta"}, "gridrun calls it 'lr'"},
      {{"batchsize", "batch", "bs", "minibatch", "minibatchsize", "perdevicebatchsize", "microbatchsize"},
       "gridrun sets 'batch_per_rank' (samples per rank and step) or 'global_batch' (all ranks together)"},
      {{"globalbatchsize", "totalbatchsize", "effectivebatchsize"}, "gridrun calls it 'global_batch'"},
      {{"numepochs", "nepochs", "maxepochs", "trainepochs", "numtrainepochs"}, "gridrun calls it 'epochs'"},
      {{"maxiters", "maxiter", "iterations", "iters", "numsteps", "steps", "trainsteps", "maxtrainsteps"},
       "gridrun calls it 'max_steps'"},
      {{"wd", "weightdecay", "l2", "decay"}, "gridrun calls it 'weight_decay'"},
      {{"gpus", "numgpus", "ngpus", "gpuspernode", "worldsize", "nprocs", "np", "numprocs", "processes",
        "nproc"},
       "gridrun runs one process per rank: set 'ranks' (with 'device: gpu' for one GPU per rank)"},
      {{"numnodes", "nnodes", "hosts", "numhosts"}, "gridrun calls it 'nodes'"},
      {{"threads", "numthreads", "nthreads", "ompnumthreads", "intraopthreads"},
       "gridrun calls it 'threads_per_rank'"},
      {{"lrscheduler", "scheduler", "schedule", "lrdecay"}, "gridrun calls it 'lr_schedule'"},
      {{"warmupiters", "warmupepochs"}, "gridrun calls it 'warmup_steps'"},
      {{"optim", "opt", "solver"}, "gridrun calls it 'optimizer'"},
      {{"dtype", "amp", "mixedprecision", "fp16", "bf16"}, "gridrun calls it 'precision' (fp32, bf16, fp16)"},
      {{"arch", "network", "net", "modelname"}, "gridrun calls it 'model'"},
      {{"data", "datasetname"}, "gridrun calls it 'dataset'"},
      {{"randomseed", "manualseed"}, "gridrun calls it 'seed' (or list them under seeds:)"},
      {{"nesterovmomentum"}, "gridrun calls it 'nesterov'"},
  };
  for (const auto& [names, hint] : kUsual)
    for (const char* n : names)
      if (k == n) return hint;
  // A typo of such a name (lerning_rate): within a quarter of its length in edits, long names only.
  for (const auto& [names, hint] : kUsual)
    for (const char* n : names)
      if (std::strlen(n) >= 7 && detail::edit_distance(k, n) <= std::max<std::size_t>(1, k.size() / 4))
        return hint;
  return "";
}

JobParams to_struct(const Params& p) {
  JobParams jp;
#define GRIDRUN_PARAM(name, type, def, help, choices, min, max, flags) get_field(p, #name, jp.name);
#include "gridrun/jobs/params.def"
#undef GRIDRUN_PARAM
  return jp;
}

ModelKind model_kind(std::string_view model) {
  if (model == "command") return ModelKind::command;
  if (model == "torchscript") return ModelKind::file;
  return ModelKind::builtin;
}

Params from_struct(const JobParams& jp) {
  Params p;
#define GRIDRUN_PARAM(name, type, def, help, choices, min, max, flags) p.emplace(#name, to_value(jp.name));
#include "gridrun/jobs/params.def"
#undef GRIDRUN_PARAM
  return p;
}

Value get_param(const JobParams& p, const std::string& name) {
  // One getter per parameter in table order, found by the name's hash: reports call this for
  // every job and column (a chain of ~60 string compares cost 15 % of a 10,000-job report).
  using Getter = Value (*)(const JobParams&);
  static const Getter getters[] = {
#define GRIDRUN_PARAM(n, type, def, help, choices, min, max, flags) \
  [](const JobParams& q) { return to_value(q.n); },
#include "gridrun/jobs/params.def"
#undef GRIDRUN_PARAM
  };
  const int i = detail::param_index(name);
  if (i >= 0) return getters[i](p);
  if (std::optional<Value> own = user_param(p, name)) return std::move(*own);
  throw std::invalid_argument("unknown job parameter '" + name + "'");
}

std::optional<Value> user_param(const JobParams& p, const std::string& name) {
  for (auto& [key, value] : user_params_of(p))
    if (key == name) return std::move(value);
  return std::nullopt;
}

std::vector<std::pair<std::string, Value>> user_params_of(const JobParams& p) {
  std::vector<std::pair<std::string, Value>> out;
  if (p.user_params.empty()) return out;
  base::Json o;
  try {
    o = base::parse_json(p.user_params, "user_params");
  } catch (const std::exception& e) {
    throw std::invalid_argument(std::string("user_params: ") + e.what());
  }
  if (!o.is_object()) throw std::invalid_argument("user_params: expected a JSON object");
  for (const auto& [key, v] : o.items()) {  // in the text's order: user_params_json sorts them
    if (v.is_boolean())
      out.emplace_back(key, v.get<bool>());
    else if (v.is_number_integer())
      out.emplace_back(key, v.get<std::int64_t>());
    else if (v.is_number_float())
      out.emplace_back(key, v.get<double>());
    else if (v.is_string())
      out.emplace_back(key, v.get<std::string>());
    else
      throw std::invalid_argument("user_params." + key + ": expected a bool, number or string");
  }
  return out;
}

std::string user_params_json(std::vector<std::pair<std::string, Value>> values) {
  if (values.empty()) return "";
  std::sort(values.begin(), values.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  std::string out = "{";
  for (std::size_t i = 0; i < values.size(); ++i) {
    if (i) out.push_back(',');
    detail::append_member(out, values[i].first, values[i].second);
  }
  out.push_back('}');
  return out;
}

namespace {
template <typename T>
bool assign(T& field, const Value& v) {
  if (from_value(v, field)) return true;
  if constexpr (std::is_same_v<T, double>) {
    if (const auto* i = std::get_if<std::int64_t>(&v)) {
      field = static_cast<double>(*i);
      return true;
    }
  }
  return false;
}
}  // namespace

bool set_param(JobParams& p, const std::string& name, const Value& v) {
#define GRIDRUN_PARAM(n, type, def, help, choices, min, max, flags) \
  if (name == #n) return assign(p.n, v);
#include "gridrun/jobs/params.def"
#undef GRIDRUN_PARAM
  return false;
}

std::optional<JobParams> params_of_values(const std::vector<Value>& v) {
  if (v.size() != param_table().size()) return std::nullopt;
  JobParams p;
  std::size_t i = 0;
#define GRIDRUN_PARAM(n, type, def, help, choices, min, max, flags) \
  if (!assign(p.n, v[i++])) return std::nullopt;
#include "gridrun/jobs/params.def"
#undef GRIDRUN_PARAM
  return p;
}

bool operator==(const JobParams& a, const JobParams& b) {
#define GRIDRUN_PARAM(n, type, def, help, choices, min, max, flags) \
  if (!(a.n == b.n)) return false;
#include "gridrun/jobs/params.def"
#undef GRIDRUN_PARAM
  return true;
}

std::vector<Value> param_values(const JobParams& p) {
  std::vector<Value> v;
  detail::values_of_struct(p, v);
  return v;
}

namespace detail {

JobParams struct_of_values(const std::vector<Value>& v) {
  JobParams jp;
  std::size_t i = 0;
#define GRIDRUN_PARAM(name, type, def, help, choices, min, max, flags) jp.name = value_as<type>(v[i++]);
#include "gridrun/jobs/params.def"
#undef GRIDRUN_PARAM
  return jp;
}

void values_of_struct(const JobParams& jp, std::vector<Value>& v) {
  v.resize(param_table().size());
  std::size_t i = 0;
#define GRIDRUN_PARAM(name, type, def, help, choices, min, max, flags) v[i++] = to_value(jp.name);
#include "gridrun/jobs/params.def"
#undef GRIDRUN_PARAM
}

}  // namespace detail

std::string canonical_json(const Params& p) {
  std::string out;
  out.reserve(64 + p.size() * 24);
  out.push_back('{');
  bool first = true;
  for (const auto& [k, v] : p) {  // std::map: keys already sorted bytewise
    if (!first) out.push_back(',');
    first = false;
    detail::append_member(out, k, v);
  }
  out.push_back('}');
  return out;
}

namespace {
// MurmurHash64A (Austin Appleby, public domain), seed 0, reading 8-byte blocks little-endian so
// that ids are the same on every platform. Eight bytes per step keeps 100,000 ids well under the
// 1 s expansion budget, where byte-wise FNV-1a was a third of it.
std::uint64_t murmur64a(const std::string& data) {
  const std::uint64_t m = 0xc6a4a7935bd1e995ULL;
  const int r = 47;
  const std::size_t len = data.size();
  const auto* bytes = reinterpret_cast<const unsigned char*>(data.data());
  std::uint64_t h = len * m;
  auto load = [&](std::size_t at, std::size_t n) {
    std::uint64_t k = 0;
    for (std::size_t i = 0; i < n; ++i) k |= static_cast<std::uint64_t>(bytes[at + i]) << (8 * i);
    return k;
  };
  auto load8 = [&](std::size_t at) {
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    std::uint64_t k;
    std::memcpy(&k, bytes + at, 8);  // one unaligned load; same value as load(at, 8)
    return k;
#else
    return load(at, 8);
#endif
  };
  const std::size_t blocks = len / 8;
  for (std::size_t b = 0; b < blocks; ++b) {
    std::uint64_t k = load8(b * 8);
    k *= m;
    k ^= k >> r;
    k *= m;
    h ^= k;
    h *= m;
  }
  if (len % 8) {
    h ^= load(blocks * 8, len % 8);
    h *= m;
  }
  h ^= h >> r;
  h *= m;
  h ^= h >> r;
  return h;
}
}  // namespace

std::string id_json(const Params& p) {
  Params kept;
  for (const auto& [k, v] : p) {
    const ParamSpec* spec = find_param(k);
    if (spec && (spec->not_in_id || (spec->id_omits_default && v == spec->default_value))) continue;
    kept.emplace_hint(kept.end(), k, v);
  }
  return canonical_json(kept);
}

std::string job_id(const Params& p) { return detail::id_of_hash(detail::hash_of_canonical(id_json(p))); }

std::string canonical_json(const JobParams& p) { return canonical_json(from_struct(p)); }
std::string id_json(const JobParams& p) { return id_json(from_struct(p)); }
std::string job_id(const JobParams& p) { return job_id(from_struct(p)); }

namespace detail {

void append_member(std::string& out, const std::string& key, const Value& v) {
  append_json_string(out, key);
  out.push_back(':');
  if (auto s = std::get_if<std::string>(&v)) {
    append_json_string(out, *s);
  } else if (auto d = std::get_if<double>(&v)) {
    out += format_double(*d);
  } else if (auto i = std::get_if<std::int64_t>(&v)) {
    out += std::to_string(*i);
  } else {
    out += std::get<bool>(v) ? "true" : "false";
  }
}

std::uint64_t hash_of_canonical(const std::string& canonical) { return murmur64a(canonical); }

std::string id_of_hash(std::uint64_t h) {
  static const char* hex = "0123456789abcdef";
  std::string id(12, '0');
  for (int i = 0; i < 12; ++i) id[static_cast<std::size_t>(i)] = hex[(h >> (60 - 4 * i)) & 0xf];
  return id;
}

}  // namespace detail

Params params_from_json(const std::string& json) {
  return detail::params_from_object(base::parse_json(json, "params"));
}

JobParams job_params_from_json(const std::string& json) { return to_struct(params_from_json(json)); }

Value parse_value(const ParamSpec& spec, const std::string& text) {
  Value v;
  std::string err;
  if (!detail::text_to_value(spec, text, v, err)) throw std::invalid_argument(spec.name + ": " + err);
  std::string bad = detail::check_value(spec, v);
  if (!bad.empty()) throw std::invalid_argument(spec.name + ": " + bad);
  return v;
}

std::string to_string(const Value& v) {
  if (auto s = std::get_if<std::string>(&v)) return *s;
  if (auto d = std::get_if<double>(&v)) return detail::format_double(*d);
  if (auto i = std::get_if<std::int64_t>(&v)) return std::to_string(*i);
  return std::get<bool>(v) ? "true" : "false";
}

const char* type_name(Type t) {
  switch (t) {
    case Type::Bool: return "bool";
    case Type::Int: return "integer";
    case Type::Float: return "number";
    case Type::String: return "string";
  }
  return "?";
}

std::int64_t time_limit_seconds(const std::string& text) {
  if (text.empty()) return 0;
  auto bad = [&]() -> std::invalid_argument {
    return std::invalid_argument("time limit '" + text +
                                 "' is not MM, MM:SS, HH:MM:SS, D-HH, D-HH:MM or D-HH:MM:SS");
  };
  std::string rest = text;
  std::int64_t days = -1;
  auto dash = rest.find('-');
  if (dash != std::string::npos) {
    if (!detail::parse_int(rest.substr(0, dash), days) ||
        rest.substr(0, dash).find_first_not_of("0123456789") != std::string::npos)
      throw bad();
    rest = rest.substr(dash + 1);
  }
  std::vector<std::int64_t> parts;
  std::size_t start = 0;
  while (true) {
    auto colon = rest.find(':', start);
    std::string part = rest.substr(start, colon == std::string::npos ? colon : colon - start);
    std::int64_t v = 0;
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos ||
        !detail::parse_int(part, v))
      throw bad();
    parts.push_back(v);
    if (colon == std::string::npos) break;
    start = colon + 1;
  }
  if (parts.size() > 3) throw bad();
  std::int64_t s = 0;
  if (days >= 0) {  // D-HH[:MM[:SS]]
    s = days * 86400 + parts[0] * 3600;
    if (parts.size() > 1) s += parts[1] * 60;
    if (parts.size() > 2) s += parts[2];
  } else if (parts.size() == 1) {  // MM
    s = parts[0] * 60;
  } else if (parts.size() == 2) {  // MM:SS
    s = parts[0] * 60 + parts[1];
  } else {  // HH:MM:SS
    s = parts[0] * 3600 + parts[1] * 60 + parts[2];
  }
  if (s <= 0) throw std::invalid_argument("time limit '" + text + "' is zero");
  return s;
}

namespace {
// A JSON scalar -> Value of the spec's type. Numbers are taken as nlohmann read them (the same
// strtod as a grid's); a string is parsed as text, as a job file written by yaml-cpp-era code or
// by hand may quote numbers.
bool json_to_value(const ParamSpec& spec, const base::Json& j, Value& out, std::string& err) {
  if (j.is_string()) return detail::text_to_value(spec, j.get<std::string>(), out, err);
  if (spec.type == Type::Float && j.is_number()) {
    out = j.get<double>();
    return true;
  }
  if (spec.type == Type::Int && j.is_number_integer() &&
      (!j.is_number_unsigned() || j.get<std::uint64_t>() <= 9223372036854775807ULL)) {
    out = j.get<std::int64_t>();
    return true;
  }
  if (spec.type == Type::Bool && j.is_boolean()) {
    out = j.get<bool>();
    return true;
  }
  if (j.is_primitive() && !j.is_null()) return detail::text_to_value(spec, j.dump(), out, err);
  err = std::string(spec.type == Type::Int ? "expected an " : "expected a ") + type_name(spec.type) +
        ", got " +
        (j.is_null()    ? "null"
         : j.is_array() ? "a list"
                        : "an object");
  return false;
}
}  // namespace

namespace detail {

Params params_from_object(const base::Json& obj) {
  if (!obj.is_object()) throw std::runtime_error("params: expected a JSON object");
  Params p;
  for (const auto& [key, value] : obj.items()) {
    const ParamSpec* spec = find_param(key);
    if (!spec) {
      std::string hint = suggest_param(key);
      throw std::runtime_error("params." + key + ": unknown parameter" +
                               (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
    }
    Value v;
    std::string err;
    if (!json_to_value(*spec, value, v, err)) throw std::runtime_error("params." + key + ": " + err);
    p.emplace(key, std::move(v));
  }
  // A job file written before a parameter existed still loads: missing keys take their defaults.
  for (const auto& spec : param_table()) p.emplace(spec.name, spec.default_value);
  return p;
}

int param_index(const std::string& name) {
  const auto& m = index_map();
  auto it = m.find(name);
  return it == m.end() ? -1 : it->second;
}

bool text_to_value(const ParamSpec& spec, const std::string& text, Value& out, std::string& err) {
  switch (spec.type) {
    case Type::Bool: {
      bool b = false;
      if (!parse_bool(text, b)) break;
      out = b;
      return true;
    }
    case Type::Int: {
      std::int64_t i = 0;
      if (!parse_int(text, i)) break;
      out = i;
      return true;
    }
    case Type::Float: {
      double d = 0;
      if (!parse_double(text, d)) break;
      out = d;
      return true;
    }
    case Type::String: out = text; return true;
  }
  err = std::string(spec.type == Type::Int ? "expected an " : "expected a ") + type_name(spec.type) +
        ", got '" + text + "'";
  return false;
}

std::string check_value(const ParamSpec& spec, const Value& v) {
  if (!spec.choices.empty()) {
    const auto& s = std::get<std::string>(v);
    for (const auto& c : spec.choices)
      if (c == s) return {};
    std::string msg = "unknown " + spec.name + " " + quote(s);
    std::string hint = closest(s, spec.choices);
    if (!hint.empty()) return msg + "; did you mean " + quote(hint) + "?";
    msg += "; choose one of ";
    for (std::size_t i = 0; i < spec.choices.size(); ++i) msg += (i ? ", " : "") + spec.choices[i];
    return msg;
  }
  if (spec.name == "time_limit") {
    try {
      time_limit_seconds(std::get<std::string>(v));
    } catch (const std::invalid_argument& e) {
      return e.what();
    }
    return {};
  }
  double x = 0;
  if (auto i = std::get_if<std::int64_t>(&v))
    x = static_cast<double>(*i);
  else if (auto d = std::get_if<double>(&v))
    x = *d;
  else
    return {};
  bool low = spec.min && (spec.min_exclusive ? x <= *spec.min : x < *spec.min);
  bool high = spec.max && x > *spec.max;
  if (!low && !high) return {};
  std::string range;
  if (spec.min && spec.max) {
    range = spec.min_exclusive ? "(" + number_text(*spec.min) + ", " + number_text(*spec.max) + "]"
                               : number_text(*spec.min) + "-" + number_text(*spec.max);
  } else if (spec.min) {
    range = std::string(spec.min_exclusive ? "must be > " : "must be >= ") + number_text(*spec.min);
  } else {
    range = "must be <= " + number_text(*spec.max);
  }
  return value_text(v) + " is out of range (" + range + ")";
}

}  // namespace detail
}  // namespace gridrun::jobs
