// The job outcome vocabulary of state.json (state.hpp).
#include "gridrun/run/state.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <stdexcept>
#include <string_view>
#include <utility>

namespace gridrun::run {

namespace {
constexpr JobOutcome kAllOutcomes[] = {
    JobOutcome::Pending,     JobOutcome::Running,       JobOutcome::Completed, JobOutcome::Failed,
    JobOutcome::Interrupted, JobOutcome::TargetReached, JobOutcome::Submitted, JobOutcome::Diverged};
}  // namespace

std::string to_string(JobOutcome s) {
  switch (s) {
    case JobOutcome::Pending: return "pending";
    case JobOutcome::Running: return "running";
    case JobOutcome::Completed: return "completed";
    case JobOutcome::Failed: return "failed";
    case JobOutcome::Interrupted: return "interrupted";
    case JobOutcome::TargetReached: return "target_reached";
    case JobOutcome::Submitted: return "submitted";
    case JobOutcome::Diverged: return "diverged";
  }
  return "pending";
}

JobOutcome job_outcome_from_string(const std::string& s) {
  for (JobOutcome st : kAllOutcomes)
    if (to_string(st) == s) return st;
  throw std::invalid_argument("unknown job state '" + s + "'");
}

JobOutcome outcome_from_results(const std::string& status) {
  for (JobOutcome st : {JobOutcome::Completed, JobOutcome::TargetReached, JobOutcome::Failed,
                        JobOutcome::Interrupted, JobOutcome::Running, JobOutcome::Diverged})
    if (to_string(st) == status) return st;
  return JobOutcome::Pending;
}

bool is_finished(JobOutcome s) { return s == JobOutcome::Completed || s == JobOutcome::TargetReached; }
bool is_queued(JobOutcome s) { return s == JobOutcome::Submitted || s == JobOutcome::Running; }
bool is_failure(JobOutcome s) { return s == JobOutcome::Failed || s == JobOutcome::Diverged; }

namespace {
bool same(double a, double b) { return a == b || (std::isnan(a) && std::isnan(b)); }
}  // namespace

bool operator==(const JobRecord& a, const JobRecord& b) {
  return a.id == b.id && a.state == b.state && a.attempts == b.attempts && a.exit_codes == b.exit_codes &&
         same(a.start_unix, b.start_unix) && same(a.end_unix, b.end_unix) && a.cores == b.cores &&
         a.gpus == b.gpus && a.host == b.host && a.phase == b.phase && a.slurm_job_id == b.slurm_job_id;
}

bool operator==(const PhaseRecord& a, const PhaseRecord& b) {
  return a.name == b.name && same(a.start_unix, b.start_unix) && same(a.makespan_s, b.makespan_s) &&
         same(a.busy_resource_s, b.busy_resource_s) && same(a.capacity, b.capacity) &&
         same(a.max_running, b.max_running) && same(a.other_cpu_share, b.other_cpu_share) &&
         a.sitting == b.sitting && a.jobs == b.jobs;
}

bool operator==(const RunState& a, const RunState& b) {
  return a.name == b.name && a.grid_dir == b.grid_dir && a.grid_file == b.grid_file &&
         a.overrides == b.overrides && a.repeats == b.repeats && a.jobs == b.jobs && a.phases == b.phases;
}

std::vector<JobRecord*> records_of(RunState& s, const std::vector<std::string>& ids) {
  std::vector<std::pair<std::string_view, std::size_t>> order;
  order.reserve(ids.size());
  for (std::size_t i = 0; i < ids.size(); ++i) order.emplace_back(ids[i], i);
  std::sort(order.begin(), order.end());
  std::vector<JobRecord*> out(ids.size());
  auto it = s.jobs.begin();
  for (const auto& [id, i] : order) {
    while (it != s.jobs.end() && std::string_view(it->first) < id) ++it;
    if (it == s.jobs.end() || it->first != id) {
      it = s.jobs.emplace_hint(it, std::string(id), JobRecord{});  // before `it`: no search
      it->second.id = it->first;
    }
    out[i] = &it->second;
  }
  return out;
}

}  // namespace gridrun::run
