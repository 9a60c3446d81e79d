// `gridrun report --profile`: per-job operator tables from `/profile` (see report.hpp). Reads the
// job files themselves (the run index holds no operator tables) and renders with the report's
// table renderer, so every --format works.
#include <algorithm>

#include "gridrun/results/report.hpp"

namespace gridrun::results {

void write_profile_report(const ReportOptions& opts, int top, std::ostream& out, std::ostream& log) {
  LoadedRun run = load_run(opts.input, log, Depth::Full);
  std::vector<Table> tables;
  std::size_t unprofiled = 0;
  const auto loaded = run.data_by_id();
  for (const auto& rec : select_jobs(run.jobs, opts)) {
    const auto it = loaded.find(rec.id);
    if (it == loaded.end()) continue;  // unreadable: load_run named it
    const JobData& job = *it->second;
    if (job.profile.empty()) {
      ++unprofiled;
      continue;
    }
    std::vector<OpProfile> ops = job.profile;
    const bool device =
        std::any_of(ops.begin(), ops.end(), [](const OpProfile& o) { return o.self_device_us > 0; });
    std::stable_sort(ops.begin(), ops.end(), [&](const OpProfile& a, const OpProfile& b) {
      return device ? a.self_device_us > b.self_device_us : a.self_cpu_us > b.self_cpu_us;
    });
    double self_total = 0;
    for (const auto& o : ops) self_total += device ? o.self_device_us : o.self_cpu_us;
    if (static_cast<int>(ops.size()) > top) ops.resize(static_cast<std::size_t>(top));
    Table t;
    std::string what;
    for (const char* k : {"model", "device", "ranks", "nodes", "batch_per_rank"}) {
      auto v = param_value(rec.params, k);
      if (v && std::string(k) == "nodes" && to_string(*v) == "1") continue;  // the usual case
      if (v) what += std::string(what.empty() ? "" : " ") + k + "=" + to_string(*v);
    }
    t.title = "Operators: " + rec.id + (what.empty() ? "" : " (" + what + ")");
    t.columns = {"operator", "calls", "self_cpu_ms", "cpu_total_ms", "self_dev_ms", "dev_total_ms", "self%"};
    for (const auto& o : ops) {
      const double self = device ? o.self_device_us : o.self_cpu_us;
      t.rows.push_back({text_cell(o.name), number_cell(static_cast<double>(o.calls), 0),
                        number_cell(o.self_cpu_us / 1e3, 2), number_cell(o.total_cpu_us / 1e3, 2),
                        number_cell(o.self_device_us / 1e3, 2), number_cell(o.total_device_us / 1e3, 2),
                        number_cell(self_total > 0 ? 100 * self / self_total : 0.0, 1)});
    }
    t.notes.push_back(std::string("sorted by self ") + (device ? "device" : "CPU") +
                      " time, summed over the profiled steps; self% = share of all operators' self time.");
    tables.push_back(t);
  }
  if (tables.empty()) {
    Table t;
    t.title = "Operators";
    t.columns = {"operator"};
    t.notes.push_back("no job recorded an operator profile (/profile): set profile_steps in the grid");
    tables.push_back(t);
  } else if (unprofiled) {
    tables.back().notes.push_back(std::to_string(unprofiled) + " job(s) without /profile not shown.");
  }
  render(tables, opts, out);
}

}  // namespace gridrun::results
