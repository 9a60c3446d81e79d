// GridSpec -> Expansion: the cartesian product, excludes, includes, derived batch fields, the
// checks that involve several parameters, ids and de-duplication.
//
// Order (documented in docs/grid.md, relied on by fifo placement and Slurm array indices): grid
// keys in file order with the last key varying fastest, then the zip group as one more axis, then
// seeds innermost; after all product jobs, include entries in file order (each crossed with seeds).
//
// Why a flat Draft per job: values are kept in table order in a vector, with the index of the Loc
// that set each one, so a combination error can point at the exact list element responsible
// (`grid.ranks[2]`), and 100,000 jobs expand in well under a second.
#include <algorithm>
#include <numeric>
#include <stdexcept>
#include <unordered_map>

#include "grid_spec.hpp"
#include "values.hpp"

namespace gridrun::jobs::detail {

namespace {

struct Draft {
  std::vector<Value> v;
  std::vector<int> loc;                  // Loc index per parameter; -1 = the table default
  std::vector<const std::string*> json;  // canonical `"name":value` of v[i]
  int batch_key = -1;  // the batch parameter the user gave last (batch_per_rank/global_batch)
};

struct Problem {
  int loc;
  std::string message;
};

class Expander {
 public:
  Expander(const GridSpec& s, const LoadOptions& o) : s_(s), opts_(o), table_(param_table()) {
    bpr_ = param_index("batch_per_rank");
    gb_ = param_index("global_batch");
    ranks_ = param_index("ranks");
    device_ = param_index("device");
    precision_ = param_index("precision");
    epochs_ = param_index("epochs");
    max_steps_ = param_index("max_steps");
    seed_ = param_index("seed");
    order_.resize(table_.size());
    std::iota(order_.begin(), order_.end(), 0);
    std::sort(order_.begin(), order_.end(),
              [&](int a, int b) { return table_[a].name < table_[b].name; });
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

  Expansion run() {
    ex_.name = s_.name;
    ex_.source = s_.file;
    ex_.compare_by = s_.compare_by;
    if (s_.has_product) product();
    for (const auto& inc : s_.includes) include(inc);
    for (std::size_t i = 0; i < hits_.size(); ++i)
      if (hits_[i] == 0) ex_.warnings.push_back(s_.warning(s_.excludes[i].loc, "matches no job"));
    for (const auto& [origin, d] : dups_) {
      ex_.warnings.push_back(s_.warning(
          origin, std::to_string(d.count) + " duplicate job" + (d.count == 1 ? "" : "s") +
                      " dropped (e.g. " + d.id + ", same as job " + std::to_string(d.index) + ")"));
    }
    if (ex_.jobs.empty() && ex_.streamed == 0 && !opts_.allow_empty)
      s_.fail(s_.product_loc, "the grid expands to no jobs" +
                                  std::string(ex_.excluded ? " (every job is excluded)" : ""));
    for (std::size_t i = 0; i < table_.size(); ++i)
      if (vary_[i]) ex_.varying.push_back(table_[i].name);
    return std::move(ex_);
  }

 private:
  void apply(Draft& d, const std::vector<Setting>& settings) const {
    for (const auto& st : settings) {
      d.v[static_cast<std::size_t>(st.param)] = st.value;
      d.loc[static_cast<std::size_t>(st.param)] = st.loc;
      d.json[static_cast<std::size_t>(st.param)] = &st.json;
      if (st.param == bpr_ || st.param == gb_) d.batch_key = st.param;
    }
  }

  void product() {
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
    // re-derives the batch fields from scratch, so nothing else carries over between jobs.
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

  void include(const IncludeEntry& inc) {
    Draft d = base_;
    apply(d, inc.settings);
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

  bool excluded(const Draft& d) {
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

  std::int64_t i64(const Draft& d, int p) const {
    return std::get<std::int64_t>(d.v[static_cast<std::size_t>(p)]);
  }
  const std::string& str(const Draft& d, int p) const {
    return std::get<std::string>(d.v[static_cast<std::size_t>(p)]);
  }
  int at(const Draft& d, int p) const { return d.loc[static_cast<std::size_t>(p)]; }
  // Renders a derived batch field into its per-job buffer.
  void derive(Draft& d, int p) {
    std::string& buf = p == bpr_ ? derived_bpr_ : derived_gb_;
    buf.clear();
    append_member(buf, table_[static_cast<std::size_t>(p)].name, d.v[static_cast<std::size_t>(p)]);
    d.json[static_cast<std::size_t>(p)] = &buf;
  }

  // "grid.ranks[2]" or "the default": where a parameter in a combination error was set.
  std::string where(const Draft& d, int p) const {
    int l = at(d, p);
    return l < 0 ? "the default" : s_.locs[static_cast<std::size_t>(l)].path;
  }

  // Derives, excludes, checks and records one job. `d` keeps its values (the product reuses it);
  // only the derived batch fields are overwritten.
  void finish(Draft& d, int origin, bool apply_excludes) {
    std::vector<Problem> problems;
    const std::int64_t ranks = i64(d, ranks_);
    if (d.batch_key == gb_) {
      const std::int64_t gb = i64(d, gb_);
      if (gb % ranks != 0) {
        problems.push_back({at(d, gb_), "global_batch " + std::to_string(gb) +
                                            " is not divisible by ranks " + std::to_string(ranks) +
                                            " (ranks from " + where(d, ranks_) + ")"});
      } else {
        d.v[static_cast<std::size_t>(bpr_)] = gb / ranks;
        d.loc[static_cast<std::size_t>(bpr_)] = at(d, gb_);
        derive(d, bpr_);
      }
    } else {
      d.v[static_cast<std::size_t>(gb_)] = i64(d, bpr_) * ranks;
      d.loc[static_cast<std::size_t>(gb_)] = at(d, bpr_);
      derive(d, gb_);
    }
    if (apply_excludes && !s_.excludes.empty() && excluded(d)) {
      ++ex_.excluded;
      return;
    }
    const std::string& device = str(d, device_);
    if (device == "gpu" && ranks > 4)
      problems.push_back(
          {at(d, ranks_), std::to_string(ranks) + " is out of range for device gpu (1-4)"});
    const std::string& precision = str(d, precision_);
    if (device != "gpu" && precision != "fp32")
      problems.push_back({at(d, precision_), precision + " needs device gpu (this job has device " +
                                                 device + " from " + where(d, device_) + ")"});
    if (i64(d, epochs_) == 0 && i64(d, max_steps_) == 0)
      problems.push_back({at(d, epochs_) >= 0 ? at(d, epochs_) : at(d, max_steps_),
                          "epochs and max_steps are both 0, so the job would never stop; set one"});
    if (!problems.empty()) report(problems, origin);

    if (first_.empty()) {
      first_ = d.v;
      first_json_ = d.json;
    } else {
      // Same rendered member (pointer) means same value, except for the derived batch fields,
      // whose member lives in a per-job scratch buffer; compare values otherwise.
      for (std::size_t i = 0; i < vary_.size(); ++i) {
        const bool scratch = static_cast<int>(i) == bpr_ || static_cast<int>(i) == gb_;
        if (!vary_[i] && (scratch || d.json[i] != first_json_[i]) && d.v[i] != first_[i])
          vary_[i] = true;
      }
    }
    // The canonical JSON from pre-rendered members: the same text as canonical_json(params)
    // (tests check id == job_id(params) for every job), without formatting 32 values per job.
    canon_.clear();
    canon_.push_back('{');
    bool first_member = true;
    for (std::size_t k = 0; k < order_.size(); ++k) {
      const auto i = static_cast<std::size_t>(order_[k]);
      if (table_[i].id_omits_default && d.v[i] == table_[i].default_value) continue;  // id_json
      if (!first_member) canon_.push_back(',');
      first_member = false;
      canon_ += *d.json[i];
    }
    canon_.push_back('}');
    const std::uint64_t hash = hash_of_canonical(canon_);
    const std::size_t index = ex_.jobs.size() + ex_.streamed;
    auto [it, inserted] = by_id_.emplace(hash >> 16, index);  // the id's 48 bits
    if (!inserted) {
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
      auto dit = std::find_if(dups_.begin(), dups_.end(),
                              [&](const auto& e) { return e.first == origin; });
      if (dit == dups_.end())
        dups_.push_back({origin, Dup{1, id, prev_index}});
      else
        ++dit->second.count;
      return;
    }
    if (opts_.on_job) {
      hashes_.push_back(hash);
      ++ex_.streamed;
      opts_.on_job(index, id_of_hash(hash), d.v);
      return;
    }
    Params p;
    for (int i : order_)
      p.emplace_hint(p.end(), table_[i].name, d.v[static_cast<std::size_t>(i)]);
    Job job;
    job.id = id_of_hash(hash);
    job.run = s_.name;
    job.index = index;
    job.params = std::move(p);
    ex_.jobs.push_back(std::move(job));
  }

  // Throws the problem that comes first in the file.
  [[noreturn]] void report(const std::vector<Problem>& problems, int origin) const {
    auto key = [&](const Problem& p) {
      int l = p.loc >= 0 ? p.loc : origin;
      const Loc& at = s_.locs[static_cast<std::size_t>(l)];
      return std::make_pair(at.line, at.col);
    };
    const Problem* best = &problems.front();
    for (const auto& p : problems)
      if (key(p) < key(*best)) best = &p;
    s_.fail(best->loc >= 0 ? best->loc : origin, best->message);
  }

  struct Dup {
    std::size_t count;
    std::string id;
    std::size_t index;
  };

  const GridSpec& s_;
  const LoadOptions& opts_;
  const std::vector<ParamSpec>& table_;
  int bpr_, gb_, ranks_, device_, precision_, epochs_, max_steps_, seed_;
  std::vector<int> order_;  // parameter indices sorted by name (the canonical key order)
  Draft base_;              // table defaults overlaid with defaults:
  std::vector<std::string> default_json_;         // rendered table defaults
  std::string derived_bpr_, derived_gb_, canon_;  // per-job scratch buffers
  std::vector<Value> first_;  // the first job's values, to find the varying parameters
  std::vector<const std::string*> first_json_;
  std::vector<bool> vary_;
  std::vector<std::size_t> hits_;
  std::vector<std::pair<int, Dup>> dups_;  // per origin (grid:, include[i]), in first-seen order
  std::unordered_map<std::uint64_t, std::size_t> by_id_;  // id bits -> job index
  std::vector<std::uint64_t> hashes_;                     // per streamed job (on_job)
  Expansion ex_;
};

}  // namespace

Expansion expand_grid(const GridSpec& spec, const LoadOptions& opts) {
  return Expander(spec, opts).run();
}

}  // namespace gridrun::jobs::detail
