// The parameters of one job: names, types, defaults and ranges (params.def, written once), the
// typed JobParams struct generated from it, canonical JSON and job ids, and the checks of a whole
// job (jobs::check) shared by the planner and the runner.
//
// Why a table and a struct: the grid loader validates YAML against the table (so every error can
// name the key, its line and what was expected), the canonical form and the job id are computed
// from the table (so key order and number spelling never change an id), and the runner reads the
// typed `JobParams` struct (so training code never looks up strings). Both come from params.def.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "gridrun/base/device.hpp"
#include "gridrun/base/job_kinds.hpp"

namespace gridrun::jobs {

// The device parameter's type (base/device.hpp): `JobParams::device` is typed, its text "cpu" /
// "gpu" exists only at the edges (grid, job file, HDF5 attribute, --set), as every Value does.
using base::Device;
using base::Precision;
using base::Task;

// A parameter value as written in a grid: YAML scalars map onto these four types.
using Value = std::variant<bool, std::int64_t, double, std::string>;

enum class Type { Bool, Int, Float, String };

// Flags of a params.def row.
enum ParamFlag : unsigned {
  kPlain = 0,
  kMinExclusive = 1,    // the range is (min, max]: lr and comm_timeout_s must be > 0
  kIdOmitsDefault = 2,  // left out of the id's text while at its default (see ParamSpec)
  kNotInId = 4,         // never in the id's text (see ParamSpec)
};

// One row of the parameter table.
struct ParamSpec {
  std::string name;
  Type type;
  Value default_value;               // used when neither defaults: nor the grid sets the key
  std::string help;                  // one line, shown in docs and `gridrun plan --help`
  std::vector<std::string> choices;  // for String parameters with a closed set of names; empty = any
  std::optional<double> min;         // inclusive numeric range, where one applies
  std::optional<double> max;
  bool min_exclusive = false;  // the range is (min, max]: lr and comm_timeout_s must be > 0
  // Parameters added after ids were first published: left out of the id's canonical text while
  // they hold their default, so every job planned before they existed keeps its id.
  bool id_omits_default = false;
  // A file's path (model_file, data_file): never in the id's text, where the file's content hash
  // (model_sha256, data_sha256) stands for it, so that the id does not depend on where the file
  // or the checkout lies and changes when the content does (issue 45).
  bool not_in_id = false;
};

// The table, in documentation order.
const std::vector<ParamSpec>& param_table();
const ParamSpec* find_param(const std::string& name);
// Closest known parameter name to `name` (edit distance), for "did you mean" hints; empty if none.
std::string suggest_param(const std::string& name);
// The gridrun name of a parameter as other tools spell it (batch_size, learning_rate, num_epochs,
// weight-decay, gpus, num_nodes, ...): "gridrun calls it 'lr'", or for a name that maps onto two
// "'batch_per_rank' (per rank) or 'global_batch' (all ranks)"; empty when `name` is no such name.
// Asked before suggest_param: an edit distance finds no 'lr' in 'learning_rate'.
std::string usual_name_hint(const std::string& name);

// A job's parameters by name, always complete and resolved once produced by the expander.
using Params = std::map<std::string, Value>;

// Typed view used by the runner and the scheduler: one field per params.def row, same name, same
// default. Meanings are the help texts of params.def (`gridrun plan --list-params`).
struct JobParams {
#define GRIDRUN_PARAM(name, type, def, help, choices, min, max, flags) type name = def;
#include "gridrun/jobs/params.def"
#undef GRIDRUN_PARAM
};

// What runs a job (the `model` parameter's kind): one of the built-in networks, a TorchScript file
// (model torchscript, `model_file`) or the user's own program (model command, a grid's command:).
// The names "torchscript" and "command" are compared here only (issue 59).
enum class ModelKind { builtin, file, command };
ModelKind model_kind(std::string_view model);
inline ModelKind model_kind(const JobParams& p) { return model_kind(p.model); }

// Converts a complete Params map to the typed struct (throws std::invalid_argument on a missing key
// or wrong type: a programming error, since the expander validated the map).
JobParams to_struct(const Params& p);
Params from_struct(const JobParams& jp);

// By-name access to the typed struct, for the code that walks every parameter in param_table()
// order (plan's columns, the HDF5 `param.*` attributes, report columns). `Params` is only the
// form values take on their way in (a grid, a job file, a command-line override); a Job and a
// results record carry JobParams.
// get_param throws std::invalid_argument for a name that is neither in the table nor one of the
// job's own parameters (user_params_of).
Value get_param(const JobParams& p, const std::string& name);
// A command grid's own parameters (grid key `params:`, issue 56): the job's values, kept in
// JobParams::user_params as one canonical JSON object, in name order; empty for a job without any.
// get_param answers their names too (plan's columns, --only, compare by, report). Throws
// std::invalid_argument on a text that is no such object (a job file edited by hand).
std::vector<std::pair<std::string, Value>> user_params_of(const JobParams& p);
// One of them by name; std::nullopt when the job has none of that name. Throws as user_params_of.
std::optional<Value> user_param(const JobParams& p, const std::string& name);
// The canonical text of such values (sorted by name, as canonical_json writes members); "" for none.
std::string user_params_json(std::vector<std::pair<std::string, Value>> values);
// Sets one field. An integer is accepted for a number parameter (JSON and HDF5 may store 1.0 as
// 1); returns false for an unknown name or another type, leaving `p` unchanged.
bool set_param(JobParams& p, const std::string& name, const Value& v);
// Field-wise equality (C++17 has no defaulted ==).
bool operator==(const JobParams& a, const JobParams& b);
inline bool operator!=(const JobParams& a, const JobParams& b) { return !(a == b); }
// Every value in param_table() order.
std::vector<Value> param_values(const JobParams& p);
// The inverse, with set_param's rules per field (an integer accepted for a number): std::nullopt
// when the count differs from param_table()'s or a value has another type. One pass, no lookup
// by name (a results index decodes 100,000 jobs' parameters this way).
std::optional<JobParams> params_of_values(const std::vector<Value>& v);

// Canonical JSON of the resolved parameters: keys sorted, no whitespace, integers as integers,
// floats in shortest round-trip form (always with '.' or 'e'), strings JSON-escaped.
std::string canonical_json(const Params& p);
// The text the job id hashes: canonical_json without the not_in_id parameters and without the
// id_omits_default parameters that hold their default value (equal to canonical_json for every
// job that sets none of them).
std::string id_json(const Params& p);
// 12 lowercase hex characters of a 64-bit hash of id_json(p).
std::string job_id(const Params& p);
// The same three from the typed struct (equal to the Params forms of from_struct(p)).
std::string canonical_json(const JobParams& p);
std::string id_json(const JobParams& p);
std::string job_id(const JobParams& p);

// Parses a flat JSON object (as written by canonical_json or a job file's "params") back to Params,
// checking every key against the table. Throws std::runtime_error naming the key on error.
Params params_from_json(const std::string& json);
// The same, typed: keys missing from the object keep their defaults (a file written before a
// parameter existed ran with its default). Throws std::runtime_error naming the key.
JobParams job_params_from_json(const std::string& json);

// "12", "0.1", "true", "resnet18" -> typed Value per the table (for CLI overrides such as
// `gridrun-train --lr 0.2`). Throws std::invalid_argument naming the key.
Value parse_value(const ParamSpec& spec, const std::string& text);
std::string to_string(const Value& v);

// "bool", "integer", "number", "string": the names used in type errors and docs.
const char* type_name(Type t);

// Seconds in a Slurm-style time limit: "MM", "MM:SS", "HH:MM:SS", "D-HH", "D-HH:MM",
// "D-HH:MM:SS"; "" is 0 (no limit). Throws std::invalid_argument on a malformed value.
std::int64_t time_limit_seconds(const std::string& text);

// ---- Checks of a whole job (check.cpp) ----
//
// Why one function for planner and runner: a combination `gridrun plan` accepts must never fail
// in `gridrun-train` minutes later on a cluster, and the other way round. The planner maps each
// problem to the grid location of `key` (file:line:col) and exits 2; gridrun-train calls the same
// function after its command-line overrides and exits 2 naming the key.

// One problem of a job.
struct Problem {
  std::string key;      // the parameter it is reported at
  std::string message;  // self-contained, e.g. "quantize=int8 needs device=cpu (...)"
  // The other parameter of the rule, or "": its location is used when `key` holds the table
  // default (not written in the grid), and `context` is said with it.
  std::string related;
  // When set, the planner appends " (CONTEXT from WHERE)", WHERE being where `related` was set,
  // e.g. " (this job has device cpu from grid.device[1])"; the runner leaves it out.
  std::string context;
};

// Every problem of the combination of values (each value on its own is assumed valid: see
// check_values), in a fixed rule order. Empty = the job can run.
std::vector<Problem> check(const JobParams& p);
// Type, choice and range problems of each value (what the grid loader checks while parsing), for
// parameters that did not come through the loader (a job file, a hand-built map).
std::vector<Problem> check_values(const Params& p);

// Which batch field the user gave; the other one is derived.
enum class BatchGiven { PerRank, Global };
// The one derivation of the batch fields: global_batch = batch_per_rank * ranks, or batch_per_rank
// = global_batch / ranks. Returns a problem (key global_batch, related ranks) when global_batch
// is not divisible by ranks, leaving `p` unchanged.
std::optional<Problem> resolve_batch(JobParams& p, BatchGiven given);

// The learning rate of a training job that sets none (no grid layer, no flag): the table's 0.1,
// except lenet's 0.05. Why lenet differs (issue 34): with SGD momentum 0.9 and no normalisation
// layer, lenet at 0.1 learns the synthetic set in ~150 steps and then oscillates (the curvature
// grows until it passes the stability limit 2 (1 + momentum) / lr), and where a run stops in that
// cycle depends on the CPU's rounding; at 0.05 its loss falls epoch after epoch for every seed,
// rank count and thread count tried (docs/runner.md, "Data sets"). The planner and gridrun-train both
// apply it, so the job's `lr` (and its id) is the value that runs; a grid that writes `lr: 0.1`
// keeps 0.1. Inference ignores lr and keeps the table's, so no inference job changed its id.
double default_lr(const std::string& model, Task task);

}  // namespace gridrun::jobs
