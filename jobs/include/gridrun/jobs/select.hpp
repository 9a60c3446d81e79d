// Parts of a grid from the command line: selectors (`--only KEY=VALUE[,VALUE...]` of run, plan,
// simulate and submit, `--filter` of report) and overrides (`--set KEY=VALUE[,VALUE...]`).
//
// Why here, in jobs/: the planner, the scheduler, Slurm submission and the report all select jobs
// by parameter, and a selector must mean the same everywhere (same syntax, same did-you-mean, same
// typed comparison: `lr=0.1` matches a job with lr 0.10); jobs/ is the lowest folder all of them
// use. Overrides are validated with the grid file's own value checks (src/params.hpp) and applied by
// the expander (jobs::LoadOptions::overrides), so an overridden value is part of each job's id.
#pragma once

#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "gridrun/jobs/job.hpp"
#include "gridrun/jobs/params.hpp"

namespace gridrun::jobs {

struct Expansion;  // grid.hpp

// One KEY=VALUE[,VALUE...]: a job matches when its KEY equals any of the values.
struct Selector {
  std::string text;                 // as given, for messages
  std::string key;                  // a parameter name or one of the caller's extra keys
  std::vector<std::string> values;  // as written
  std::vector<Value> typed;         // per value, for a parameter key (empty for an extra key)
  const ParamSpec* spec = nullptr;  // null for an extra key (compared as text)
  // A key that may be a grid's own parameter (params:, issue 56): compared in the type of the job's
  // value; a job without it does not match.
  bool own = false;

  // Whether `have` (the job's value of key, as text: jobs::to_string or a record's text) is one of
  // the values: typed for a parameter (numbers by value, bools by meaning), else exact text.
  bool matches(const std::string& have) const;
  bool matches(const Value& have) const;
  // For a parameter key (spec or own): whether the job's value of it is one of the values.
  bool matches(const JobParams& params) const;
};

// Parses one selector. `flag` names the flag in messages ("--only", "--filter"); `extra_keys` are
// the keys besides parameter names the caller can answer (e.g. id, status). Throws
// std::invalid_argument "FLAG TEXT: ..." for a malformed selector, an unknown key (with a
// did-you-mean hint) or a value of the wrong type ("--only epochs=x: epochs: expected an integer,
// got 'x'").
Selector parse_selector(const std::string& text, const std::string& flag,
                        const std::vector<std::string>& extra_keys = {});
std::vector<Selector> parse_selectors(const std::vector<std::string>& texts, const std::string& flag,
                                      const std::vector<std::string>& extra_keys = {});

// For a selector of an own key (Selector::own): "FLAG TEXT: unknown key ..." (with its did-you-mean)
// when `any`, a job of the run, has no such parameter of its grid's params:; else "".
std::string undeclared(const Selector& s, const JobParams& any, const std::string& flag);

// Whether a job matches every selector; `value_of(key)` gives the job's value of a key as text.
bool matches_all(const std::vector<Selector>& selectors,
                 const std::function<std::string(const std::string& key)>& value_of);
// The same for a planned job: a parameter, or the extra key "id".
bool matches_all(const std::vector<Selector>& selectors, const JobParams& params, const std::string& id);

// The jobs that match every selector, in grid order, keeping their ids and indices (a part of the
// grid, not a new one). Throws std::invalid_argument "FLAG A=B FLAG C=D: selects none of the grid's
// N jobs" when none does: running nothing is never what was meant.
std::vector<Job> select_jobs(const std::vector<Job>& jobs, const std::vector<Selector>& selectors,
                             const std::string& flag = "--only");

// The warning for `--only` selectors that leave `selected` one value of a compare-by grid's compare
// key (ex.compare_by) while the grid's jobs have several (ex.varying): "--only ranks=1 leaves one
// value of ranks, which this grid compares (...)" (jobs::compare_gone_message). "" when the
// comparison stands, when there is none, and when --set took it already (ex.compare_gone says so).
std::string lost_compare_warning(const Expansion& ex, const std::vector<Job>& selected,
                                 const std::vector<Selector>& selectors);

// One override KEY=VALUE, validated exactly as the value of KEY in a grid file (type, choices,
// range). Throws std::invalid_argument "FLAG TEXT: KEY: expected an integer, got 'x'" (an unknown
// key gets a did-you-mean hint).
std::pair<std::string, Value> parse_override(const std::string& text, const std::string& flag = "--set");
// One override KEY=VALUE[,VALUE...]: the key and its values, each validated as parse_override
// validates one ("FLAG TEXT: KEY: expected a number, got 'abc'"; an empty one in a list is an
// error too). The value is split at commas only where no value of KEY can hold one (a number, an
// integer, a bool, a string with a closed set of names: model=mlp,lenet); a free string (a path,
// mlp_hidden's "256,128", time_limit, command) is one value, commas included (override_list_splits).
std::pair<std::string, std::vector<Value>> parse_override_list(const std::string& text,
                                                               const std::string& flag = "--set");
// Whether `--set KEY=A,B` lists values for this parameter (false: a comma is part of its value).
bool override_list_splits(const ParamSpec& spec);
// Every --set, grouped by key: one (KEY, VALUE) pair per value, a key's values next to each other,
// keys in the order they first appear. A key with one value is an override as before (every job
// takes it); a key with several (`--set lr=0.1,0.2`, or `--set lr=0.1 --set lr=0.2`: a repeated
// key adds values, which is also how state.json records a list, one KEY=VALUE per value) is an
// axis of those values (LoadOptions::overrides). A value given twice for one key is an error
// ("FLAG TEXT: lr=0.1 is given twice").
std::vector<std::pair<std::string, Value>> parse_overrides(const std::vector<std::string>& texts,
                                                           const std::string& flag = "--set");

}  // namespace gridrun::jobs
