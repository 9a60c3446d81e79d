// The job outcome vocabulary of state.json (state.hpp).
#include "gridrun/run/state.hpp"

#include <stdexcept>

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

}  // namespace gridrun::run
