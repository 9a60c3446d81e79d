// The parameters of one job: the single source of truth for names, types, defaults and ranges.
//
// Why a table and a struct: the grid loader validates YAML against the table (so every error can
// name the key, its line and what was expected), the canonical form and the job id are computed
// from the table (so key order and number spelling never change an id), and the runner reads the
// typed `JobParams` struct (so training code never looks up strings).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <variant>
#include <vector>

namespace gridrun::jobs {

// A parameter value as written in a grid: YAML scalars map onto these four types.
using Value = std::variant<bool, std::int64_t, double, std::string>;

enum class Type { Bool, Int, Float, String };

// One row of the parameter table.
struct ParamSpec {
  std::string name;
  Type type;
  Value default_value;              // used when neither defaults: nor the grid sets the key
  std::string help;                 // one line, shown in docs and `gridrun plan --help`
  std::vector<std::string> choices; // for String parameters with a closed set of names; empty = any
  std::optional<double> min;        // inclusive numeric range, where one applies
  std::optional<double> max;
  bool min_exclusive = false;       // the range is (min, max]: lr and comm_timeout_s must be > 0
  // Parameters added after ids were first published: left out of the id's canonical text while
  // they hold their default, so every job planned before they existed keeps its id.
  bool id_omits_default = false;
};

// The table, in documentation order.
const std::vector<ParamSpec>& param_table();
const ParamSpec* find_param(const std::string& name);
// Closest known parameter name to `name` (edit distance), for "did you mean" hints; empty if none.
std::string suggest_param(const std::string& name);

// A job's parameters by name, always complete and resolved once produced by the expander.
using Params = std::map<std::string, Value>;

// Typed view used by the runner and the scheduler. Field names equal parameter names.
struct JobParams {
  std::string model = "mlp";
  std::string dataset = "synthetic";
  std::string data_dir;
  std::string task = "train";          // train | inference
  std::int64_t epochs = 1;             // 0 = unbounded (then max_steps must be set)
  std::int64_t max_steps = 0;          // 0 = unbounded
  std::int64_t batch_per_rank = 32;
  std::int64_t global_batch = 32;      // = batch_per_rank * ranks, always both resolved
  double lr = 0.1;
  std::string lr_schedule = "constant"; // constant | step | cosine
  std::int64_t warmup_steps = 0;
  bool scale_lr = false;               // linear lr scaling: lr * global_batch / 256
  std::string optimizer = "sgd";       // sgd | adam | adamw
  double momentum = 0.9;
  bool nesterov = false;
  double weight_decay = 0.0;
  std::string device = "cpu";          // cpu | gpu
  std::int64_t ranks = 1;
  std::int64_t threads_per_rank = 1;
  std::string precision = "fp32";      // fp32 | bf16 | fp16 (half precisions gpu only)
  std::int64_t seed = 0;
  std::int64_t eval_every = 1;         // epochs between evaluations; 0 = never
  double target_accuracy = 0.0;        // 0 = none; stop when test accuracy reaches it
  double bucket_mb = 25.0;
  bool overlap = true;
  std::int64_t profile_steps = 0;
  std::string time_limit;              // Slurm style: "MM", "HH:MM:SS", "D-HH:MM:SS"; empty = none
  std::int64_t train_samples = 0;      // 0 = the whole split (synthetic: 4096)
  std::int64_t test_samples = 0;       // 0 = the whole split (synthetic: 1024)
  std::int64_t timing_warmup_steps = 5; // steps excluded from summary timings
  double checkpoint_minutes = 0.0;     // 0 = checkpoint at each epoch end only
  double comm_timeout_s = 300.0;       // a collective that waits longer aborts the job
  std::string checkpoint;              // inference: file, folder or job id; empty = random weights
  std::int64_t infer_batches = 50;     // inference: timed batches per rank
  std::string quantize = "none";       // inference: none | int8 (dynamic, linear layers, CPU)
  // GPU step (docs/gpu.md): ignored on CPU.
  bool cudnn_benchmark = true;         // cuDNN autotuning of convolution algorithms
  bool tf32 = true;                    // fp32 convolutions and matmuls on TF32 tensor cores
  bool cuda_graph = false;             // capture the step once, replay it (ranks=1, static shapes)
  std::string memory_format = "auto";  // auto | contiguous | channels_last
  std::int64_t jobs_per_gpu = 1;       // placement: N one-rank jobs share a GPU (gridrun run)
};

// Converts a complete Params map to the typed struct (throws std::invalid_argument on a missing key
// or wrong type: a programming error, since the expander validated the map).
JobParams to_struct(const Params& p);
Params from_struct(const JobParams& jp);

// Canonical JSON of the resolved parameters: keys sorted, no whitespace, integers as integers,
// floats in shortest round-trip form (always with '.' or 'e'), strings JSON-escaped.
std::string canonical_json(const Params& p);
// The text the job id hashes: canonical_json without the id_omits_default parameters that hold
// their default value (equal to canonical_json for every job that does not set one of them).
std::string id_json(const Params& p);
// 12 lowercase hex characters of a 64-bit hash of canonical_json(p).
std::string job_id(const Params& p);

// Parses a flat JSON object (as written by canonical_json or a job file's "params") back to Params,
// checking every key against the table. Throws std::runtime_error naming the key on error.
Params params_from_json(const std::string& json);

// "12", "0.1", "true", "resnet18" -> typed Value per the table (for CLI overrides such as
// `gridrun-train --lr 0.2`). Throws std::invalid_argument naming the key.
Value parse_value(const ParamSpec& spec, const std::string& text);
std::string to_string(const Value& v);

// "bool", "integer", "number", "string": the names used in type errors and docs.
const char* type_name(Type t);

// Seconds in a Slurm-style time limit: "MM", "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM",
// "D-HH:MM:SS"; "" is 0 (no limit). Throws std::invalid_argument on a malformed value.
std::int64_t time_limit_seconds(const std::string& text);

}  // namespace gridrun::jobs
