// The parameter table, typed/untyped conversions, canonical JSON and job ids.
//
// Why the id is a hash of canonical JSON: the canonical form sorts keys and spells every number
// one way (see text.hpp), so the id depends only on the resolved parameter values, never on how a
// grid file wrote them. The hash is MurmurHash64A (seed 0, little-endian blocks); the id is its top
// 48 bits as 12 lowercase hex characters. Changing either changes every id: don't.
#include "gridrun/jobs/params.hpp"

#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <unordered_map>

#include "text.hpp"
#include "values.hpp"

namespace gridrun::jobs {

namespace {

using S = std::vector<std::string>;
using std::nullopt;

ParamSpec row(std::string name, Type t, Value def, std::string help, S choices = {},
              std::optional<double> min = nullopt, std::optional<double> max = nullopt,
              bool min_exclusive = false) {
  ParamSpec p{std::move(name), t, std::move(def), std::move(help), std::move(choices), min, max};
  p.min_exclusive = min_exclusive;
  return p;
}

ParamSpec new_row(ParamSpec p) {
  p.id_omits_default = true;
  return p;
}

std::vector<ParamSpec> build_table() {
  const Type B = Type::Bool, I = Type::Int, F = Type::Float, T = Type::String;
  using I64 = std::int64_t;
  return {
      row("model", T, std::string("mlp"), "network to train",
          {"mlp", "lenet", "resnet18", "resnet50", "vgg11", "vgg16", "alexnet", "transformer",
           "densenet121"}),
      row("dataset", T, std::string("synthetic"),
          "data set; synthetic needs no files, fashion-mnist reads Debian's by default",
          {"synthetic", "cifar10", "mnist", "fashion-mnist", "text"}),
      row("data_dir", T, std::string(),
          "directory with the data set files; empty = runner default"),
      row("task", T, std::string("train"), "train, or inference (forward passes only)",
          {"train", "inference"}),
      row("epochs", I, I64{1}, "epochs to run; 0 = unbounded (then max_steps must be set)", {},
          0.0),
      row("max_steps", I, I64{0}, "optimizer steps to run; 0 = unbounded; first limit wins", {},
          0.0),
      row("batch_per_rank", I, I64{32}, "samples per rank per step (or give global_batch)", {},
          1.0),
      row("global_batch", I, I64{32}, "samples per step over all ranks = batch_per_rank * ranks",
          {}, 1.0),
      row("lr", F, 0.1, "learning rate (before scale_lr and schedule)", {}, 0.0, nullopt, true),
      row("lr_schedule", T, std::string("constant"), "learning-rate schedule after warm-up",
          {"constant", "step", "cosine"}),
      row("warmup_steps", I, I64{0}, "steps of linear lr warm-up from 0", {}, 0.0),
      row("scale_lr", B, false, "linear scaling rule: lr * global_batch / 256"),
      row("optimizer", T, std::string("sgd"), "optimizer", {"sgd", "adam", "adamw"}),
      row("momentum", F, 0.9, "SGD momentum (adam: beta1)", {}, 0.0, 1.0),
      row("nesterov", B, false, "Nesterov momentum (sgd only)"),
      row("weight_decay", F, 0.0, "L2 weight decay (adamw: decoupled)", {}, 0.0),
      row("device", T, std::string("cpu"), "where each rank computes", {"cpu", "gpu"}),
      row("ranks", I, I64{1}, "MPI ranks (data-parallel replicas); gpu: 1-4, one GPU each", {},
          1.0),
      row("threads_per_rank", I, I64{1}, "intra-op threads (CPU cores) per rank", {}, 1.0),
      row("precision", T, std::string("fp32"), "compute precision; bf16/fp16 only on gpu",
          {"fp32", "bf16", "fp16"}),
      row("seed", I, I64{0}, "random seed (weights, data order, synthetic data)", {}, 0.0),
      row("eval_every", I, I64{1}, "epochs between test-set evaluations; 0 = never", {}, 0.0),
      row("target_accuracy", F, 0.0, "stop when test accuracy (fraction) reaches it; 0 = none", {},
          0.0, 1.0),
      row("bucket_mb", F, 25.0, "gradient allreduce bucket size in MiB", {}, 0.0, nullopt, true),
      row("overlap", B, true, "overlap gradient allreduce with the backward pass"),
      row("profile_steps", I, I64{0}, "steps to record with the operator profiler; 0 = off", {},
          0.0),
      row("time_limit", T, std::string(),
          "wall-time limit: MM, HH:MM:SS or D-HH:MM:SS; empty = none"),
      row("train_samples", I, I64{0}, "training samples used; 0 = whole split (synthetic: 4096)",
          {}, 0.0),
      row("test_samples", I, I64{0}, "test samples used; 0 = whole split (synthetic: 1024)", {},
          0.0),
      row("timing_warmup_steps", I, I64{5}, "first steps left out of summary timings", {}, 0.0),
      row("checkpoint_minutes", F, 0.0, "minutes between checkpoints; 0 = at each epoch end", {},
          0.0),
      row("comm_timeout_s", F, 300.0, "seconds a collective may wait before the job aborts", {},
          0.0, nullopt, true),
      row("checkpoint", T, std::string(),
          "inference: checkpoint file/folder or training job id; empty = random weights"),
      row("infer_batches", I, I64{50}, "inference: timed batches per rank (after warm-up)", {},
          1.0),
      row("quantize", T, std::string("none"), "inference: dynamic int8 linear layers (CPU)",
          {"none", "int8"}),
      new_row(row("cudnn_benchmark", B, true,
                  "gpu: let cuDNN time and pick convolution algorithms (first steps slower)")),
      new_row(row("tf32", B, true,
                   "gpu: fp32 convolutions and matmuls on TF32 tensor cores (false: full fp32)")),
      new_row(row("cuda_graph", B, false,
                  "gpu: capture the training step once and replay it (ranks=1, fixed batch)")),
      new_row(row("memory_format", T, std::string("auto"),
                  "gpu: conv activation layout; auto = channels_last for conv nets in bf16/fp16",
                  {"auto", "contiguous", "channels_last"})),
      new_row(row("jobs_per_gpu", I, I64{1},
                  "gpu, ranks=1: up to N such jobs share one GPU, 1/N of its memory each",
                  {}, 1.0, 64.0)),
  };
}

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

// X-macro of JobParams members: keeps to_struct/from_struct complete (a unit test checks the
// member list against the table).
#define GRIDRUN_JOB_FIELDS(X)                                                                   \
  X(model)                                                                                      \
  X(dataset) X(data_dir) X(task) X(epochs) X(max_steps) X(batch_per_rank) X(global_batch) X(lr) \
      X(lr_schedule) X(warmup_steps) X(scale_lr) X(optimizer) X(momentum) X(nesterov)           \
          X(weight_decay) X(device) X(ranks) X(threads_per_rank) X(precision) X(seed)           \
              X(eval_every) X(target_accuracy) X(bucket_mb) X(overlap) X(profile_steps)         \
                  X(time_limit) X(train_samples) X(test_samples) X(timing_warmup_steps)         \
                      X(checkpoint_minutes) X(comm_timeout_s) X(checkpoint) X(infer_batches) \
                          X(quantize) X(cudnn_benchmark) X(tf32) X(cuda_graph) X(memory_format) X(jobs_per_gpu)

template <typename T>
void get_field(const Params& p, const char* name, T& out) {
  auto it = p.find(name);
  if (it == p.end()) throw std::invalid_argument(std::string("job parameters lack '") + name + "'");
  if (const T* v = std::get_if<T>(&it->second)) {
    out = *v;
    return;
  }
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

JobParams to_struct(const Params& p) {
  JobParams jp;
#define GRIDRUN_GET(f) get_field(p, #f, jp.f);
  GRIDRUN_JOB_FIELDS(GRIDRUN_GET)
#undef GRIDRUN_GET
  return jp;
}

Params from_struct(const JobParams& jp) {
  Params p;
#define GRIDRUN_PUT(f) p.emplace(#f, Value{jp.f});
  GRIDRUN_JOB_FIELDS(GRIDRUN_PUT)
#undef GRIDRUN_PUT
  return p;
}

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
    if (spec && spec->id_omits_default && v == spec->default_value) continue;
    kept.emplace_hint(kept.end(), k, v);
  }
  return canonical_json(kept);
}

std::string job_id(const Params& p) {
  return detail::id_of_hash(detail::hash_of_canonical(id_json(p)));
}

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
  YAML::Node root;
  try {
    root = YAML::Load(json);
  } catch (const YAML::Exception& e) {
    throw std::runtime_error("params: not valid JSON: " + e.msg + " at line " +
                             std::to_string(e.mark.line + 1) + ", column " +
                             std::to_string(e.mark.column + 1));
  }
  return detail::params_from_node(root);
}

Value parse_value(const ParamSpec& spec, const std::string& text) {
  Value v;
  std::string err;
  if (!detail::text_to_value(spec, text, v, err))
    throw std::invalid_argument(spec.name + ": " + err);
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
    case Type::Bool:
      return "bool";
    case Type::Int:
      return "integer";
    case Type::Float:
      return "number";
    case Type::String:
      return "string";
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

namespace detail {

Params params_from_node(const YAML::Node& node) {
  if (!node.IsMap()) throw std::runtime_error("params: expected a JSON object");
  Params p;
  for (const auto& kv : node) {
    const std::string key = kv.first.Scalar();
    const ParamSpec* spec = find_param(key);
    if (!spec) {
      std::string hint = suggest_param(key);
      throw std::runtime_error("params." + key + ": unknown parameter" +
                               (hint.empty() ? "" : "; did you mean '" + hint + "'?"));
    }
    if (!kv.second.IsScalar())
      throw std::runtime_error("params." + key + ": expected a " + type_name(spec->type));
    Value v;
    std::string err;
    if (!detail::text_to_value(*spec, kv.second.Scalar(), v, err))
      throw std::runtime_error("params." + key + ": " + err);
    if (!p.emplace(key, std::move(v)).second)
      throw std::runtime_error("params." + key + ": duplicate key");
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
    case Type::String:
      out = text;
      return true;
  }
  err = std::string(spec.type == Type::Int ? "expected an " : "expected a ") +
        type_name(spec.type) + ", got '" + text + "'";
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
