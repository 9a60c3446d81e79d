// Public entry points of grid loading: read the file, parse (grid_parse.cpp), expand
// (grid_expand.cpp). GridError formats its location once, here.
#include "gridrun/jobs/grid.hpp"

#include <algorithm>
#include <filesystem>

#include "gridrun/base/fs.hpp"

#include "grid_spec.hpp"
#include "params.hpp"

namespace gridrun::jobs {

namespace {
std::string format_error(const std::string& file, int line, int col, const std::string& key_path,
                         const std::string& message) {
  std::string s = file;
  if (line > 0) s += ":" + std::to_string(line) + ":" + std::to_string(col);
  s += ": ";
  if (!key_path.empty()) s += key_path + ": ";
  return s + message;
}
}  // namespace

namespace detail {

namespace {

// `--set KEY=A,B`: the axis of KEY's values takes the place of what the grid varies KEY with (a
// grid key's axis, in place; a zip column, taken out of the zip; the seeds), so that every job of
// the grid, KEY aside, runs once per value (hydra's multirun: a command-line sweep replaces the
// config's). The batch keys count as one: a list of global_batch replaces an axis of
// batch_per_rank as well. A key the grid does not vary gets an axis after the grid's and the
// zip's, before the seeds.
void add_sweep(GridSpec& s, int p, std::vector<Setting> values) {
  const int bpr = param_index("batch_per_rank"), gb = param_index("global_batch");
  const bool batch = p == bpr || p == gb;
  auto replaced = [&](int q) { return q == p || (batch && (q == bpr || q == gb)); };
  Axis sweep;
  sweep.params = {p};
  for (auto& st : values) sweep.points.push_back({std::move(st)});
  bool placed = false;
  for (std::size_t i = 0; i < s.axes.size();) {
    Axis& a = s.axes[i];
    if (std::none_of(a.params.begin(), a.params.end(), replaced)) {
      ++i;
      continue;
    }
    if (a.params.size() == 1 && !placed) {  // a grid key (or a zip of one column): replaced in place
      a = sweep;
      placed = true;
      ++i;
      continue;
    }
    // A zip: its other columns keep varying together.
    a.params.erase(std::remove_if(a.params.begin(), a.params.end(), replaced), a.params.end());
    for (auto& point : a.points)
      point.erase(
          std::remove_if(point.begin(), point.end(), [&](const Setting& st) { return replaced(st.param); }),
          point.end());
    if (a.params.empty())
      s.axes.erase(s.axes.begin() + static_cast<std::ptrdiff_t>(i));
    else
      ++i;
  }
  if (s.has_seeds && p == param_index("seed")) s.has_seeds = false;  // the list replaces seeds:
  if (!placed) s.axes.push_back(sweep);
  s.sweeps.push_back(std::move(sweep));
}

}  // namespace

void add_overrides(GridSpec& spec, const std::vector<std::pair<std::string, Value>>& overrides) {
  std::vector<std::pair<int, std::vector<Setting>>> by_key;  // in order of first appearance
  for (const auto& [key, value] : overrides) {
    Setting st;
    st.param = spec.index_of(key);
    if (st.param < 0) {
      // jobs::parse_overrides left the key for the grid to answer (it may have been one of its own).
      std::string given;
      for (const auto& [k, v] : overrides)
        if (k == key) given += (given.empty() ? "" : ",") + to_string(v);
      std::string msg = "--set " + key + "=" + given + ": unknown key '" + key + "'";
      const std::string usual = usual_name_hint(key), hint = suggest_param(key);
      throw std::invalid_argument(msg + (!usual.empty() ? ": " + usual
                                         : !hint.empty()
                                             ? "; did you mean '" + hint + "'?"
                                             : " (expected a parameter: gridrun plan --list-params, or "
                                               "one of the grid's params:)"));
    }
    st.value = value;
    if (static_cast<std::size_t>(st.param) >= param_table().size()) {
      // The grid's own: jobs::parse_overrides left its text, typed and checked here.
      const ParamSpec& own = spec.table[static_cast<std::size_t>(st.param)];
      const std::string* text = std::get_if<std::string>(&value);
      std::string err;
      if (text && !text_to_value(own, *text, st.value, err))
        throw std::invalid_argument("--set " + key + "=" + *text + ": " + err);
      if (const std::string bad = check_value(own, st.value); !bad.empty())
        throw std::invalid_argument("--set " + key + "=" + to_string(st.value) + ": " + bad);
    }
    spec.locs.push_back(Loc{0, 0, "--set " + key});
    st.loc = static_cast<int>(spec.locs.size()) - 1;
    append_member(st.json, key, value);
    auto it = std::find_if(by_key.begin(), by_key.end(), [&](const auto& e) { return e.first == st.param; });
    if (it == by_key.end()) {
      by_key.emplace_back(st.param, std::vector<Setting>{});
      it = by_key.end() - 1;
    }
    it->second.push_back(std::move(st));
  }
  // A list of one batch key beside any value of the other: the last one given would win in some
  // jobs and not in others.
  const int bpr = param_index("batch_per_rank"), gb = param_index("global_batch");
  bool has_bpr = false, has_gb = false, batch_list = false;
  for (const auto& [p, settings] : by_key) {
    has_bpr = has_bpr || p == bpr;
    has_gb = has_gb || p == gb;
    batch_list = batch_list || ((p == bpr || p == gb) && settings.size() > 1);
  }
  if (batch_list && has_bpr && has_gb)
    throw std::invalid_argument("--set: give either batch_per_rank or global_batch, not both");
  for (auto& [p, settings] : by_key) {
    if (settings.size() == 1)
      spec.overrides.push_back(std::move(settings.front()));  // every job takes it (as before lists)
    else
      add_sweep(spec, p, std::move(settings));
  }
}
}  // namespace detail

namespace {

// Expansion::compare_gone (LoadOptions::warn_lost_compare): only when the overrides left one value
// of the compare key, the grid is expanded again without them (streamed, no file checks) to see
// whether it had several.
void note_lost_compare(const std::string& yaml, const std::string& display_name, const LoadOptions& opts,
                       Expansion& ex) {
  const std::string& by = ex.compare_by;
  if (std::find(ex.varying.begin(), ex.varying.end(), by) != ex.varying.end()) return;
  if (ex.jobs.empty() && ex.streamed == 0) return;
  const auto p = static_cast<std::size_t>(detail::param_index(by));
  std::vector<Value> seen;  // two are enough
  LoadOptions lo;
  lo.allow_empty = true;
  lo.max_jobs = opts.max_jobs;
  lo.base_dir = opts.base_dir;
  lo.on_job = [&](std::size_t, const std::string&, const std::vector<Value>& v) {
    if (seen.size() < 2 && std::find(seen.begin(), seen.end(), v[p]) == seen.end()) seen.push_back(v[p]);
  };
  try {
    detail::GridSpec plain = detail::parse_grid(yaml, display_name);
    plain.compare_repeats = 1;
    detail::expand_grid(plain, lo);
  } catch (const std::exception&) {
    return;  // the grid alone does not expand (the --set made it valid): it compared nothing
  }
  if (seen.size() < 2) return;
  // The cause, most likely first: a --set of the key, of the other batch key, else every single
  // --set (one of them made the key's values equal, e.g. ranks through global_batch).
  const std::string other = by == "global_batch"     ? "batch_per_rank"
                            : by == "batch_per_rank" ? "global_batch"
                                                     : "";
  auto flags_of = [&](const std::string& key) {
    std::string f;
    for (const auto& set : opts.overrides) {
      const auto n = std::count_if(opts.overrides.begin(), opts.overrides.end(),
                                   [&](const auto& o) { return o.first == set.first; });
      if (key.empty() ? n == 1 : set.first == key)
        f += (f.empty() ? "" : " ") + std::string("--set ") + set.first + "=" + to_string(set.second);
    }
    return f;
  };
  std::string flags = flags_of(by);
  if (flags.empty() && !other.empty()) flags = flags_of(other);
  if (flags.empty()) flags = flags_of("");
  ex.compare_gone = compare_gone_message(ex, flags);
}

}  // namespace

std::string compare_gone_message(const Expansion& ex, const std::string& flags) {
  const std::string& by = ex.compare_by;
  return flags + " leaves one value of " + by + ", which this grid compares (compare: " + by +
         (ex.compare_at.empty() ? "" : ", at " + ex.compare_at) + "): the report will have no " + by +
         " comparison";
}

GridError::GridError(const std::string& file, int line, int col, const std::string& key_path,
                     const std::string& message)
    : std::invalid_argument(format_error(file, line, col, key_path, message)),
      file_(file),
      key_path_(key_path),
      message_(message),
      line_(line),
      col_(col) {}

Expansion load_grid_string(const std::string& yaml, const std::string& display_name,
                           const LoadOptions& opts) {
  detail::GridSpec spec = detail::parse_grid(yaml, display_name);
  detail::add_overrides(spec, opts.overrides);
  Expansion ex = detail::expand_grid(spec, opts);
  if (opts.warn_lost_compare && !ex.compare_by.empty() && !opts.overrides.empty())
    note_lost_compare(yaml, display_name, opts, ex);
  return ex;
}

Expansion load_grid(const std::string& path, const LoadOptions& opts, const base::FileKind& kind) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) throw GridError(path, 0, 0, "", "is a directory");
  // Through base::open_checked (issue 57): a FIFO as a run's grid.yaml blocked status, ls and run,
  // and a link to /dev/zero was read until memory ran out.
  std::string why;
  const auto text = base::try_read_file(path, kind, &why);
  if (!text) {
    // The message names the file; GridError puts its own "PATH: " in front.
    const std::string prefix = path + ": ";
    if (why.rfind(prefix, 0) == 0) why.erase(0, prefix.size());
    throw GridError(path, 0, 0, "", why.empty() ? "cannot open grid file" : why);
  }
  return load_grid_string(*text, path, opts);
}

}  // namespace gridrun::jobs
