// The parsed, type-checked form of a grid file, between the YAML reader (grid_parse.cpp) and the
// expander (grid_expand.cpp). Not installed.
//
// Why two stages: every per-value problem (unknown key, wrong type, bad choice, out of range) is
// found while walking the YAML in file order, with its location at hand; the expander then only
// deals with combinations (jobs::check and jobs::resolve_batch on each job, excludes, duplicates)
// and refers back to the recorded locations by index.
#pragma once

#include <string>
#include <vector>

#include "gridrun/jobs/params.hpp"

namespace gridrun::jobs {
// Declared only: grid.hpp includes nothing of this file's, and this file must not include grid.hpp
// (grid.cpp includes this one; an include each way would be a cycle inside jobs/).
struct LoadOptions;
struct Expansion;
}  // namespace gridrun::jobs

namespace gridrun::jobs::detail {

// Where something was written: 1-based line/column and the key path ("grid.ranks[2]").
struct Loc {
  int line = 0;
  int col = 0;
  std::string path;
};

// One parameter value with the index of its Loc in GridSpec::locs.
struct Setting {
  int param = -1;
  Value value;
  int loc = -1;
  std::string json;  // `"name":value` as in canonical JSON, rendered once (see grid_expand.cpp)
};

// One axis of the cartesian product: a grid key (one param), the zip group (several params
// varying together) or the seeds. points[i] holds the settings of the axis' i-th position.
struct Axis {
  std::vector<int> params;
  std::vector<std::vector<Setting>> points;
};

struct ExcludeEntry {
  std::vector<std::pair<int, std::vector<Value>>> match;  // param -> any of these values
  int loc = -1;
};

struct IncludeEntry {
  std::vector<Setting> settings;
  int loc = -1;
};

// A grid's top-level command:, env: and files: (command jobs, issue 56), with their locations.
struct CommandSpec {
  std::vector<std::string> argv;
  std::vector<int> arg_locs;
  int loc = -1;  // the command: key
  std::vector<std::pair<std::string, std::string>> env;
  int env_loc = -1;
  std::vector<std::string> files;
  std::vector<int> file_locs;
  int files_loc = -1;
};

struct GridSpec {
  std::string file;
  std::string name;
  // The parameters a Setting's index refers to: param_table() first, then the grid's own (the
  // `params:` section of a command grid, issue 56), each with its type, default and range. The
  // expander folds the own ones into JobParams::user_params.
  std::vector<ParamSpec> table = param_table();
  int params_loc = -1;  // the params: key
  // A parameter's index in `table` (gridrun's or the grid's own), or -1.
  int index_of(const std::string& name) const;
  std::vector<Loc> locs;
  int root_loc = -1;     // the whole document, for problems with no better location
  int product_loc = -1;  // `grid:` (else `zip:`, `seeds:`): where product jobs come from
  std::vector<Setting> defaults;
  std::vector<Axis> axes;  // grid keys in file order, then the zip group, then the sample: group
  bool has_seeds = false;
  Axis seeds;
  bool has_product = false;  // grid: or zip: given, or no include: (a single default job)
  std::vector<ExcludeEntry> excludes;
  std::vector<IncludeEntry> includes;
  std::string compare_by;
  int compare_by_loc = -1;
  // compare: {repeats: N, order: alternate|random}: every phase measured N times, interleaved.
  int compare_repeats = 1;
  int compare_repeats_loc = -1;
  std::string compare_order = "alternate";
  CommandSpec command;             // argv empty: the jobs are gridrun-train's
  std::vector<Setting> overrides;  // LoadOptions::overrides, applied last to every job (add_overrides)
  // The keys LoadOptions::overrides gives several values (`--set lr=0.1,0.2`), one axis each, in
  // the order given. Each is also one of `axes` (add_overrides put it there, in place of the grid's
  // own variation of its key); include: entries are crossed with them here (Expander::include).
  std::vector<Axis> sweeps;

  [[noreturn]] void fail(int loc, const std::string& message) const;
  std::string warning(int loc, const std::string& message) const;
};

GridSpec parse_grid(const std::string& yaml_text, const std::string& file);
// LoadOptions::overrides as settings at the key path "--set KEY" (values already validated): a key
// with one value joins `overrides`; a key with several becomes an axis (`sweeps`) that replaces
// the grid's axis over it (or the zip column, the seeds, the other batch key's axis) in place, or
// comes after the grid's axes and zip when the grid does not vary it.
void add_overrides(GridSpec& spec, const std::vector<std::pair<std::string, Value>>& overrides);
Expansion expand_grid(const GridSpec& spec, const LoadOptions& opts);

}  // namespace gridrun::jobs::detail
