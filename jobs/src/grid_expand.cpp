// GridSpec -> Expansion: the cartesian product, excludes, includes, derived batch fields, the
// checks that involve several parameters, ids and de-duplication.
//
// Order (documented in docs/grid.md, relied on by fifo placement and Slurm array indices): grid
// keys in file order with the last key varying fastest, then the zip group as one more axis, then
// the `--set` lists the grid does not vary, then seeds innermost; after all product jobs, include
// entries in file order (each crossed with the `--set` lists, then with seeds).
//
// The rules of a whole job are jobs::check and jobs::resolve_batch (check.cpp), shared with the
// runner; this file only maps each problem to the grid location of its key.
//
// Why a flat Draft per job: values are kept in table order in a vector, with the index of the Loc
// that set each one, so a combination error can point at the exact list element responsible
// (`grid.ranks[2]`), and 100,000 jobs expand in well under a second.
#include <algorithm>
#include <filesystem>
#include <map>
#include <numeric>
#include <optional>
#include <random>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

#include "grid_spec.hpp"
#include "gridrun/base/sha256.hpp"
#include "gridrun/jobs/command.hpp"
#include "gridrun/jobs/grid.hpp"
#include "params.hpp"

namespace gridrun::jobs::detail {

namespace {

struct Draft {
  std::vector<Value> v;
  std::vector<int> loc;                  // Loc index per parameter; -1 = the table default
  std::vector<const std::string*> json;  // canonical `"name":value` of v[i]
  int batch_key = -1;  // the batch parameter the user gave last (batch_per_rank/global_batch)
};

// Where relative files start: LoadOptions::base_dir, else the grid file's folder, else here: the
// Expander's grid_dir_ and a command grid's command_dir.
std::filesystem::path grid_dir_of(const GridSpec& s, const LoadOptions& o) {
  std::error_code ec;
  if (!o.base_dir.empty()) return std::filesystem::absolute(o.base_dir, ec);
  if (!s.file.empty() && std::filesystem::is_regular_file(s.file, ec))
    return std::filesystem::absolute(s.file, ec).parent_path();
  return std::filesystem::current_path(ec);
}

class Expander {
 public:
  Expander(const GridSpec& s, const LoadOptions& o);
  Expansion run();

 private:
  struct Dup {
    std::size_t count;
    std::string id;
    std::size_t index;
  };

  void apply(Draft& d, const std::vector<Setting>& settings) const;
  void product();
  void include(const IncludeEntry& inc);
  void include_seeds(Draft& d, const IncludeEntry& inc);
  bool excluded(const Draft& d);
  void finish(Draft& d, int origin, bool apply_excludes);
  // The steps of finish(), in order.
  void derive_lr(Draft& d);
  std::optional<Problem> derive_batch(Draft& d, JobParams& jp);
  std::optional<Problem> derive_files(Draft& d, JobParams& jp);
  void check_job(const Draft& d, const JobParams& jp, std::optional<Problem> batch, int origin) const;
  void check_model(const Draft& d, const JobParams& jp, int origin);
  void note_varying(const Draft& d);
  void fold_own(Draft& d);
  std::uint64_t hash_id_text(const Draft& d);
  bool drop_duplicate(std::uint64_t hash, int origin);
  void record(const Draft& d, JobParams&& jp, std::uint64_t hash);
  int repeats() const;
  void add_repeats();

  int at(const Draft& d, const std::string& name) const;
  std::string where(const Draft& d, const std::string& name) const;
  [[noreturn]] void report(const Draft& d, const std::vector<Problem>& problems, int origin) const;

  const GridSpec& s_;
  const LoadOptions& opts_;
  const std::vector<ParamSpec>& table_;
  int bpr_, gb_, seed_, model_file_, model_sha_, data_file_, data_sha_, lr_, model_, task_, user_;
  std::size_t builtin_;  // param_table()'s rows; table_'s further rows are the grid's own (params:)
  std::map<double, std::string> lr_json_;  // rendered `"lr":x` per model default (stable pointers)
  // Files a job names (issue 33): the grid's folder that relative paths start from, and per path
  // what was found (absolute path, content hash or problem, each rendered once).
  std::filesystem::path grid_dir_;
  struct FileFacts {
    std::string abs, abs_json, sha, sha_json, problem;
  };
  std::unordered_map<std::string, FileFacts> files_;
  bool cache_warned_ = false;  // the SHA-256 cache's warning, once per expansion (sha256_file_cached)
  std::unordered_map<std::string, std::string> data_checked_;
  std::unordered_map<std::string, std::string> model_checked_;  // model content|input -> problem ("" = fine)
  std::unordered_set<const std::string*>
      derived_sha_;         // FileFacts::sha_json members in drafts  // path|model -> problem ("" = fine)
  std::vector<int> order_;  // parameter indices sorted by name (the canonical key order)
  Draft base_;              // table defaults overlaid with defaults:
  std::vector<std::string> default_json_;                    // rendered table defaults
  std::string derived_bpr_, derived_gb_, canon_, own_json_;  // per-job scratch buffers
  std::vector<Value> first_;  // the first job's values, to find the varying parameters
  std::vector<const std::string*> first_json_;
  std::vector<bool> vary_;
  std::vector<std::size_t> hits_;
  std::vector<std::pair<int, Dup>> dups_;  // per origin (grid:, include[i]), in first-seen order
  std::unordered_map<std::uint64_t, std::size_t> by_id_;  // id bits -> job index
  std::vector<std::uint64_t> hashes_;                     // per streamed job (on_job)
  std::vector<std::vector<Value>> streamed_values_;       // streamed jobs' values, kept for repeats
  Expansion ex_;
};

Expander::Expander(const GridSpec& s, const LoadOptions& o) : s_(s), opts_(o), table_(s.table) {
  builtin_ = param_table().size();
  user_ = param_index("user_params");
  bpr_ = param_index("batch_per_rank");
  gb_ = param_index("global_batch");
  seed_ = param_index("seed");
  model_file_ = param_index("model_file");
  model_sha_ = param_index("model_sha256");
  data_file_ = param_index("data_file");
  data_sha_ = param_index("data_sha256");
  lr_ = param_index("lr");
  model_ = param_index("model");
  task_ = param_index("task");
  grid_dir_ = grid_dir_of(s_, o);
  order_.resize(builtin_);  // the grid's own parameters are one member, user_params
  std::iota(order_.begin(), order_.end(), 0);
  std::sort(order_.begin(), order_.end(), [&](int a, int b) { return table_[a].name < table_[b].name; });
  base_.v.reserve(table_.size());
  default_json_.resize(table_.size());
  for (std::size_t i = 0; i < table_.size(); ++i) {
    base_.v.push_back(table_[i].default_value);
    append_member(default_json_[i], table_[i].name, table_[i].default_value);
    base_.json.push_back(&default_json_[i]);
  }
  base_.loc.assign(table_.size(), -1);
  apply(base_, s_.defaults);
  vary_.assign(table_.size(), false);
  hits_.assign(s_.excludes.size(), 0);
}

Expansion Expander::run() {
  ex_.name = s_.name;
  ex_.source = s_.file;
  ex_.compare_by = s_.compare_by;
  if (s_.compare_by_loc >= 0) {
    const Loc& at = s_.locs[static_cast<std::size_t>(s_.compare_by_loc)];
    ex_.compare_at = s_.file + ":" + std::to_string(at.line) + ":" + std::to_string(at.col);
  }
  if (s_.has_product) product();
  for (const auto& inc : s_.includes) include(inc);
  for (std::size_t i = 0; i < hits_.size(); ++i)
    if (hits_[i] == 0) ex_.warnings.push_back(s_.warning(s_.excludes[i].loc, "matches no job"));
  for (const auto& [origin, d] : dups_) {
    ex_.warnings.push_back(s_.warning(origin, std::to_string(d.count) + " duplicate job" +
                                                  (d.count == 1 ? "" : "s") + " dropped (e.g. " + d.id +
                                                  ", same as job " + std::to_string(d.index) + ")"));
  }
  if (ex_.jobs.empty() && ex_.streamed == 0 && !opts_.allow_empty)
    s_.fail(s_.product_loc,
            "the grid expands to no jobs" + std::string(ex_.excluded ? " (every job is excluded)" : ""));
  add_repeats();
  // model_sha256 follows model_file: shown only where one path held two contents.
  if (vary_[static_cast<std::size_t>(model_file_)]) vary_[static_cast<std::size_t>(model_sha_)] = false;
  if (vary_[static_cast<std::size_t>(data_file_)]) vary_[static_cast<std::size_t>(data_sha_)] = false;
  for (std::size_t i = 0; i < table_.size(); ++i)
    if (vary_[i] && static_cast<int>(i) != user_) ex_.varying.push_back(table_[i].name);
  for (std::size_t i = builtin_; i < table_.size(); ++i) ex_.own_params.push_back(table_[i].name);
  return std::move(ex_);
}

void Expander::apply(Draft& d, const std::vector<Setting>& settings) const {
  for (const auto& st : settings) {
    d.v[static_cast<std::size_t>(st.param)] = st.value;
    d.loc[static_cast<std::size_t>(st.param)] = st.loc;
    d.json[static_cast<std::size_t>(st.param)] = &st.json;
    if (st.param == bpr_ || st.param == gb_) d.batch_key = st.param;
  }
}

void Expander::product() {
  std::vector<const Axis*> axes;
  for (const auto& a : s_.axes) axes.push_back(&a);
  if (s_.has_seeds) axes.push_back(&s_.seeds);
  std::size_t total = 1;
  for (const Axis* a : axes) {
    if (total > opts_.max_jobs / a->points.size())
      s_.fail(s_.product_loc, "the grid has more than " + std::to_string(opts_.max_jobs) +
                                  " jobs; split it or check the lists");
    total *= a->points.size();
  }
  if (!opts_.on_job) ex_.jobs.reserve(total + s_.includes.size());
  by_id_.reserve(total + s_.includes.size());
  // One draft updated in place: each step re-applies only the axes the odometer moved. finish()
  // re-derives an unset lr and the batch fields from scratch, so nothing else carries over between jobs.
  std::vector<std::size_t> pos(axes.size(), 0);
  Draft d = base_;
  for (const Axis* a : axes) apply(d, a->points[0]);
  for (std::size_t n = 0; n < total; ++n) {
    finish(d, s_.product_loc, true);
    for (std::size_t a = axes.size(); a-- > 0;) {  // odometer: last axis fastest
      const bool carry = ++pos[a] == axes[a]->points.size();
      if (carry) pos[a] = 0;
      apply(d, axes[a]->points[pos[a]]);
      if (!carry) break;
    }
  }
}

void Expander::include(const IncludeEntry& inc) {
  Draft d = base_;
  apply(d, inc.settings);
  if (!s_.sweeps.empty()) {
    // Crossed with the `--set` lists (GridSpec::sweeps), whose values win over the entry's own as
    // a single --set value does, the first list outermost; then with the seeds as below.
    std::vector<std::size_t> pos(s_.sweeps.size(), 0);
    while (true) {
      Draft ds = d;
      for (std::size_t k = 0; k < pos.size(); ++k) apply(ds, s_.sweeps[k].points[pos[k]]);
      include_seeds(ds, inc);
      std::size_t a = pos.size();
      while (a > 0 && ++pos[a - 1] == s_.sweeps[a - 1].points.size()) pos[--a] = 0;
      if (a == 0) return;
    }
  }
  include_seeds(d, inc);
}

void Expander::include_seeds(Draft& d, const IncludeEntry& inc) {
  bool sets_seed = std::any_of(inc.settings.begin(), inc.settings.end(),
                               [&](const Setting& st) { return st.param == seed_; });
  if (!s_.has_seeds || sets_seed) {
    finish(d, inc.loc, false);
    return;
  }
  for (const auto& point : s_.seeds.points) {
    Draft ds = d;
    apply(ds, point);
    finish(ds, inc.loc, false);
  }
}

bool Expander::excluded(const Draft& d) {
  bool any = false;
  for (std::size_t i = 0; i < s_.excludes.size(); ++i) {
    bool all = true;
    for (const auto& [p, values] : s_.excludes[i].match) {
      const Value& have = d.v[static_cast<std::size_t>(p)];
      if (std::find(values.begin(), values.end(), have) == values.end()) {
        all = false;
        break;
      }
    }
    if (all) {
      ++hits_[i];  // keep counting: every entry's hits decide its "matches no job" warning
      any = true;
    }
  }
  return any;
}

// Derives, excludes, checks and records one job. `d` keeps its values (the product reuses it);
// only the derived fields (an unset lr, the batch fields) are overwritten.
void Expander::finish(Draft& d, int origin, bool apply_excludes) {
  apply(d, s_.overrides);  // the innermost layer: over every grid value (LoadOptions::overrides)
  derive_lr(d);
  fold_own(d);
  JobParams jp = struct_of_values(d.v);
  std::optional<Problem> batch = derive_batch(d, jp);
  if (!batch) batch = derive_files(d, jp);
  if (apply_excludes && !s_.excludes.empty() && excluded(d)) {
    ++ex_.excluded;
    return;
  }
  check_job(d, jp, std::move(batch), origin);
  check_model(d, jp, origin);
  note_varying(d);
  const std::uint64_t hash = hash_id_text(d);
  if (drop_duplicate(hash, origin)) return;
  record(d, std::move(jp), hash);
}

// The grid's own parameters (params:) as one JSON object in user_params, the member the id and
// the job file hold (their names are no members of their own: a job file is read against
// param_table()). Rendered per job into a scratch buffer, like the derived batch fields.
void Expander::fold_own(Draft& d) {
  if (table_.size() == builtin_) return;
  std::vector<std::pair<std::string, Value>> own;
  own.reserve(table_.size() - builtin_);
  for (std::size_t i = builtin_; i < table_.size(); ++i) own.emplace_back(table_[i].name, d.v[i]);
  const auto u = static_cast<std::size_t>(user_);
  d.v[u] = user_params_json(std::move(own));
  own_json_.clear();
  append_member(own_json_, table_[u].name, d.v[u]);
  d.json[u] = &own_json_;
}

// A job that sets no lr gets its model's default (jobs::default_lr), so the job file and the id
// hold the lr that runs. Set every time, not only for lenet: the product reuses one draft, and the
// previous job's model may have had another default.
void Expander::derive_lr(Draft& d) {
  const auto i = static_cast<std::size_t>(lr_);
  if (d.loc[i] != -1) return;  // written somewhere in the grid (or by --set): the user's value
  const double lr = default_lr(
      std::get<std::string>(d.v[static_cast<std::size_t>(model_)]),
      base::parse_task(std::get<std::string>(d.v[static_cast<std::size_t>(task_)])).value_or(Task::train));
  d.v[i] = lr;
  auto [it, added] = lr_json_.try_emplace(lr);
  if (added) append_member(it->second, table_[i].name, d.v[i]);
  d.json[i] = &it->second;
}

// jobs::resolve_batch on the job, its result written back into the draft: the derived field takes
// the location of the one the user gave, so errors about it point there.
std::optional<Problem> Expander::derive_batch(Draft& d, JobParams& jp) {
  const bool global = d.batch_key == gb_;
  std::optional<Problem> bad = resolve_batch(jp, global ? BatchGiven::Global : BatchGiven::PerRank);
  if (bad) return bad;
  const int derived = global ? bpr_ : gb_;
  const auto i = static_cast<std::size_t>(derived);
  d.v[i] = global ? jp.batch_per_rank : jp.global_batch;
  d.loc[i] = d.loc[static_cast<std::size_t>(global ? gb_ : bpr_)];
  std::string& buf = global ? derived_bpr_ : derived_gb_;
  buf.clear();
  append_member(buf, table_[i].name, d.v[i]);
  d.json[i] = &buf;
  return std::nullopt;
}

// model_file and data_file as absolute paths (relative ones start at the grid file's folder, so a
// grid and its files move together), model_sha256 and data_sha256 = the files' content hashes
// (the id holds them, not the paths: two different files at one path are two jobs, one file at
// two paths is one; base::sha256_file_cached remembers them by stat), and the data file checked by
// LoadOptions::check_data_file.
std::optional<Problem> Expander::derive_files(Draft& d, JobParams& jp) {
  namespace fs = std::filesystem;
  const auto mf = static_cast<std::size_t>(model_file_), ms = static_cast<std::size_t>(model_sha_),
             df = static_cast<std::size_t>(data_file_);
  auto facts = [&](std::size_t i, std::size_t sha) -> FileFacts& {
    const std::string& given = std::get<std::string>(d.v[i]);
    auto [it, fresh] = files_.try_emplace(std::to_string(i) + "|" + given);
    FileFacts& f = it->second;
    if (!fresh) return f;
    std::error_code ec;
    fs::path p(given);
    if (p.is_relative()) p = grid_dir_ / p;
    f.abs = p.lexically_normal().string();
    append_member(f.abs_json, table_[i].name, Value{f.abs});
    if (!fs::is_regular_file(f.abs, ec)) {
      f.problem =
          "'" + given + "' is not a readable file" + (given == f.abs ? "" : " (looked for " + f.abs + ")");
      return f;
    }
    try {
      std::string warning;
      f.sha = base::sha256_file_cached(f.abs, base::default_sha256_cache(), &warning);
      if (!warning.empty() && !cache_warned_) ex_.warnings.push_back(warning);
      cache_warned_ = cache_warned_ || !warning.empty();
    } catch (const std::exception& e) {
      f.problem = e.what();
    }
    append_member(f.sha_json, table_[sha].name, Value{f.sha});
    return f;
  };
  // model_sha256 and data_sha256 are filled in here (issue 45: a data file was identified by its
  // path only). A grid may pin one (a grid gridrun wrote from planned jobs, e.g. a calibration's,
  // carries it): a pin must match the file, or the file changed since.
  auto derive = [&](std::size_t fi, std::size_t si, std::string& file,
                    std::string& sha) -> std::optional<Problem> {
    const std::string sha_name = table_[si].name;
    const bool pinned = d.json[si] != &default_json_[si] && derived_sha_.count(d.json[si]) == 0 &&
                        !std::get<std::string>(d.v[si]).empty();
    if (file.empty()) {
      if (!pinned) {
        d.v[si] = table_[si].default_value;
        d.json[si] = &default_json_[si];
        sha.clear();
      }
      return std::nullopt;
    }
    // Relative paths are resolved for every job; a later job may meet a value already resolved.
    FileFacts& f = facts(fi, si);
    if (!f.problem.empty()) return Problem{table_[fi].name, f.problem, {}, {}};
    if (pinned && std::get<std::string>(d.v[si]) != f.sha)
      return Problem{sha_name,
                     sha_name + " " + std::get<std::string>(d.v[si]) + " is not the SHA-256 of " + f.abs +
                         " (" + f.sha + "): the file changed since; leave " + sha_name +
                         " out (the planner fills it in)",
                     {},
                     {}};
    d.v[fi] = f.abs;
    d.json[fi] = &f.abs_json;
    if (!pinned) {
      d.v[si] = f.sha;
      d.json[si] = &f.sha_json;
      derived_sha_.insert(&f.sha_json);
      d.loc[si] = d.loc[fi];
    }
    file = f.abs;
    sha = f.sha;
    return std::nullopt;
  };
  if (auto p = derive(mf, ms, jp.model_file, jp.model_sha256)) return p;
  if (auto p = derive(df, static_cast<std::size_t>(data_sha_), jp.data_file, jp.data_sha256)) return p;
  if (jp.data_file.empty() || !opts_.check_data_file || jp.dataset != "hdf5") return std::nullopt;
  auto [it, fresh] = data_checked_.try_emplace(jp.data_file + "|" + jp.model);
  if (fresh) it->second = opts_.check_data_file(jp);
  if (!it->second.empty()) return Problem{"data_file", it->second, {}, {}};
  return std::nullopt;
}

// jobs::check on the job (after the batch problem, which comes first at the same location).
void Expander::check_job(const Draft& d, const JobParams& jp, std::optional<Problem> batch,
                         int origin) const {
  std::vector<Problem> problems = check(jp);
  if (!batch && problems.empty()) return;
  if (batch) problems.insert(problems.begin(), std::move(*batch));
  report(d, problems, origin);
}

// A TorchScript job's model checked by LoadOptions::check_model_file (archive, load and a trial
// forward on the job's input, in a child process: the command's side), after the job passed every
// other check and its excludes, once per model content and input; reported at model_file.
void Expander::check_model(const Draft& d, const JobParams& jp, int origin) {
  if (!opts_.check_model_file || model_kind(jp) != ModelKind::file || jp.model_file.empty()) return;
  auto [it, fresh] = model_checked_.try_emplace(jp.model_sha256 + "|" + jp.dataset + "|" + jp.data_dir + "|" +
                                                jp.data_file + "|" + jp.input);
  if (fresh) it->second = opts_.check_model_file(jp);
  if (!it->second.empty()) report(d, {Problem{"model_file", it->second, {}, {}}}, origin);
}

void Expander::note_varying(const Draft& d) {
  if (first_.empty()) {
    first_ = d.v;
    first_json_ = d.json;
    return;
  }
  // Same rendered member (pointer) means same value, except for the derived batch fields, whose
  // member lives in a per-job scratch buffer; compare values otherwise.
  for (std::size_t i = 0; i < vary_.size(); ++i) {
    const bool scratch = static_cast<int>(i) == bpr_ || static_cast<int>(i) == gb_;
    if (!vary_[i] && (scratch || d.json[i] != first_json_[i]) && d.v[i] != first_[i]) vary_[i] = true;
  }
}

// The id's text (id_json) from pre-rendered members, hashed: the same text as id_json(params)
// (tests check id == job_id(params) for every job), without formatting 40 values per job.
std::uint64_t Expander::hash_id_text(const Draft& d) {
  canon_.clear();
  canon_.push_back('{');
  bool first_member = true;
  for (int k : order_) {
    const auto i = static_cast<std::size_t>(k);
    if (table_[i].not_in_id || (table_[i].id_omits_default && d.v[i] == table_[i].default_value)) continue;
    if (!first_member) canon_.push_back(',');
    first_member = false;
    canon_ += *d.json[i];
  }
  canon_.push_back('}');
  return hash_of_canonical(canon_);
}

// True when a job with the same id came earlier (counted for the origin's warning).
bool Expander::drop_duplicate(std::uint64_t hash, int origin) {
  const std::size_t index = ex_.jobs.size() + ex_.streamed;
  auto [it, inserted] = by_id_.emplace(hash >> 16, index);  // the id's 48 bits
  if (inserted) return false;
  std::string id;
  std::size_t prev_index = it->second;
  if (opts_.on_job) {
    // Streamed jobs keep no parameters to compare; the full 64-bit hash stands in for the text
    // (two different texts with equal 64-bit hashes among 100,000 jobs: p ~ 3e-10).
    id = id_of_hash(hashes_[it->second]);
    if (hashes_[it->second] != hash)
      throw std::runtime_error("job id collision: " + id + " for two different jobs");
  } else {
    const Job& prev = ex_.jobs[it->second];
    id = prev.id;
    prev_index = prev.index;
    if (id_json(prev.params) != canon_)
      throw std::runtime_error("job id collision: " + id + " for two different jobs");
  }
  ++ex_.duplicates;
  auto dit = std::find_if(dups_.begin(), dups_.end(), [&](const auto& e) { return e.first == origin; });
  if (dit == dups_.end())
    dups_.push_back({origin, Dup{1, id, prev_index}});
  else
    ++dit->second.count;
  return true;
}

// Hands the job to on_job, or stores it with its typed view and full canonical text.
void Expander::record(const Draft& d, JobParams&& jp, std::uint64_t hash) {
  const std::size_t index = ex_.jobs.size() + ex_.streamed;
  if (opts_.on_job) {
    hashes_.push_back(hash);
    ++ex_.streamed;
    if (repeats() > 1) streamed_values_.push_back(d.v);
    opts_.on_job(index, id_of_hash(hash), d.v);
    return;
  }
  Job job;
  std::size_t size = order_.size() + 1;  // braces and commas
  for (int k : order_) size += d.json[static_cast<std::size_t>(k)]->size();
  job.canonical.reserve(size);  // exactly: 100,000 jobs' texts are 100 MB, no slack
  job.canonical.push_back('{');
  for (std::size_t k = 0; k < order_.size(); ++k) {
    const auto i = static_cast<std::size_t>(order_[k]);
    if (k) job.canonical.push_back(',');
    job.canonical += *d.json[i];
  }
  job.canonical.push_back('}');
  job.id = id_of_hash(hash);
  job.run = s_.name;
  job.index = index;
  job.params = std::move(jp);
  ex_.jobs.push_back(std::move(job));
}

int Expander::repeats() const {
  if (s_.compare_by.empty()) return 1;
  return opts_.repeats > 0 ? opts_.repeats : s_.compare_repeats;
}

// compare.repeats: the jobs of repeats 1..N-1, in blocks per repeat whose phases come in the
// interleaved order (grid.hpp, Expansion::compare_repeats). The phases' order of first appearance
// is the first block's; block r takes it reversed for odd r (alternate), or shuffled with a
// generator seeded by the grid's name and r (random: the same order on every machine).
void Expander::add_repeats() {
  const int n = repeats();
  ex_.compare_repeats = n;
  ex_.compare_order = s_.compare_order;
  if (n <= 1) return;
  const int by = s_.index_of(s_.compare_by);
  const int rep = param_index("repeat");
  vary_[static_cast<std::size_t>(rep)] = true;
  const std::size_t first = ex_.jobs.size() + ex_.streamed;  // jobs of the first repeat
  // Each first-repeat job's phase, as an index into `phases` (in order of first appearance).
  std::vector<std::string> phases;
  std::vector<std::size_t> phase_of(first);
  for (std::size_t k = 0; k < first; ++k) {
    const std::string v = to_string(opts_.on_job ? streamed_values_[k][static_cast<std::size_t>(by)]
                                                 : get_param(ex_.jobs[k].params, s_.compare_by));
    phase_of[k] = static_cast<std::size_t>(std::find(phases.begin(), phases.end(), v) - phases.begin());
    if (phase_of[k] == phases.size()) phases.push_back(v);
  }
  auto copy = [&](std::size_t k, int r) {
    JobParams jp = ex_.jobs[k].params;
    jp.repeat = r;
    return make_job(s_.name, 0, std::move(jp));
  };
  // blocked (no interleaving: every repeat of a phase right after the other, what interleaving is
  // measured against): the stored jobs in phase order, then repeat. Streamed jobs (a plain `gridrun
  // plan`) are already out, so they take the alternate order below.
  if (s_.compare_order == "blocked" && !opts_.on_job) {
    std::vector<Job> out;
    out.reserve(first * static_cast<std::size_t>(n));
    for (std::size_t p = 0; p < phases.size(); ++p)
      for (int r = 0; r < n; ++r)
        for (std::size_t k = 0; k < first; ++k)
          if (phase_of[k] == p) out.push_back(r == 0 ? ex_.jobs[k] : copy(k, r));
    for (std::size_t k = 0; k < out.size(); ++k) out[k].index = k;
    ex_.jobs = std::move(out);
    return;
  }
  std::uint64_t seed = 1469598103934665603ULL;  // FNV-1a of the name: a stable, portable seed
  for (unsigned char c : s_.name) seed = (seed ^ c) * 1099511628211ULL;
  for (int r = 1; r < n; ++r) {
    std::vector<std::size_t> order(phases.size());
    for (std::size_t p = 0; p < order.size(); ++p) order[p] = p;
    if (s_.compare_order == "random") {
      std::mt19937_64 gen(seed + static_cast<std::uint64_t>(r));  // mt19937_64's output is standard
      for (std::size_t i = order.size(); i > 1; --i) std::swap(order[i - 1], order[gen() % i]);
    } else if (r % 2 == 1) {
      std::reverse(order.begin(), order.end());
    }
    for (const std::size_t phase : order) {
      for (std::size_t k = 0; k < first; ++k) {
        if (phase_of[k] != phase) continue;
        const std::size_t index = ex_.jobs.size() + ex_.streamed;
        if (opts_.on_job) {
          std::vector<Value> v = streamed_values_[k];
          v[static_cast<std::size_t>(rep)] = static_cast<std::int64_t>(r);
          Params by_name;
          for (std::size_t i = 0; i < builtin_; ++i) by_name.emplace(table_[i].name, v[i]);
          ++ex_.streamed;
          opts_.on_job(index, job_id(by_name), v);
        } else {
          ex_.jobs.push_back(copy(k, r));
          ex_.jobs.back().index = index;
        }
      }
    }
  }
}

int Expander::at(const Draft& d, const std::string& name) const {
  const int p = s_.index_of(name);
  return p < 0 ? -1 : d.loc[static_cast<std::size_t>(p)];
}

// "grid.ranks[2]" or "the default": where a parameter in a combination error was set.
std::string Expander::where(const Draft& d, const std::string& name) const {
  int l = at(d, name);
  return l < 0 ? "the default" : s_.locs[static_cast<std::size_t>(l)].path;
}

// Throws the problem that comes first in the file, at the location of its key (or, when the key
// holds its table default, of the related parameter; else of the job's origin).
void Expander::report(const Draft& d, const std::vector<Problem>& problems, int origin) const {
  auto loc_of = [&](const Problem& p) {
    int l = at(d, p.key);
    if (l < 0 && !p.related.empty()) l = at(d, p.related);
    return l < 0 ? origin : l;
  };
  auto key = [&](const Problem& p) {
    const Loc& l = s_.locs[static_cast<std::size_t>(loc_of(p))];
    return std::make_pair(l.line, l.col);
  };
  const Problem* best = &problems.front();
  for (const auto& p : problems)
    if (key(p) < key(*best)) best = &p;
  std::string message = best->message;
  if (!best->context.empty()) message += " (" + best->context + " from " + where(d, best->related) + ")";
  s_.fail(loc_of(*best), message);
}

}  // namespace

namespace {

// A command grid's program checked where the planner sees it (a missing program or script, a
// files: entry that is no file: errors at their grid lines), and command_dir and command_sha256
// added to every job: the SHA-256 over the content hashes of the command's files and files:, in
// that order, so an edited script makes new jobs while the same files elsewhere make the same ones.
void add_command_files(GridSpec& s, const LoadOptions& o) {
  const CommandSpec& c = s.command;
  const std::string dir = grid_dir_of(s, o).lexically_normal().string();
  int index = 0;
  const std::string problem = command_problem(c.argv, dir, &index);
  if (!problem.empty()) s.fail(c.arg_locs[static_cast<std::size_t>(index)], problem);
  std::string hashes;
  try {
    for (const auto& f : command_files(c.argv, dir))
      hashes += base::sha256_file_cached(f, base::default_sha256_cache());
    for (std::size_t i = 0; i < c.files.size(); ++i) {
      std::filesystem::path p(c.files[i]);
      if (p.is_relative()) p = std::filesystem::path(dir) / p;
      std::error_code ec;
      if (!std::filesystem::is_regular_file(p, ec))
        s.fail(c.file_locs[i], "'" + c.files[i] + "' is not a readable file (looked for " +
                                   p.lexically_normal().string() + ")");
      hashes += base::sha256_file_cached(p.lexically_normal().string(), base::default_sha256_cache());
    }
  } catch (const GridError&) {
    throw;
  } catch (const std::exception& e) {
    s.fail(c.loc, e.what());
  }
  auto add = [&](const char* name, const std::string& v) {
    Setting st;
    st.param = param_index(name);
    st.value = v;
    st.loc = c.loc;
    append_member(st.json, name, st.value);
    s.defaults.push_back(std::move(st));
  };
  add("command_dir", dir);
  add("command_sha256", base::sha256_hex(hashes.data(), hashes.size()));
}

}  // namespace

Expansion expand_grid(const GridSpec& spec, const LoadOptions& opts) {
  if (spec.command.argv.empty()) return Expander(spec, opts).run();
  GridSpec s = spec;
  add_command_files(s, opts);
  return Expander(s, opts).run();
}

}  // namespace gridrun::jobs::detail
