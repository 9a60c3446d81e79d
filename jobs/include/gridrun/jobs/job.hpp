// A job as it travels between the planner, the scheduler and the runner: `runs/<name>/jobs/<id>.json`.
//
// The file is the only contract between `gridrun` and `gridrun-train`: the runner never sees the grid.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "gridrun/jobs/params.hpp"

namespace gridrun::jobs {

// The parameters come two ways, of the same values: `params`, typed (every reader: the runner,
// the scheduler, plan's columns through get_param), and `canonical`, the canonical JSON rendered
// once by the expander and written as is into the job file. A Job built field by field may leave
// `canonical` empty; job_to_json then renders it from `params`.
struct Job {
  std::string id;         // job_id(params)
  std::string run;        // the grid's name
  std::size_t index = 0;  // position in the expanded grid (stable order for fifo and job arrays)
  JobParams params;       // resolved, complete
  std::string canonical;  // canonical_json(params), or "" (see above)
  // Free-form string facts added by whoever launches the job (scheduler: "cores", "gpus", "host",
  // "phase"); written as a flat "meta" object and recorded by the runner in the results file.
  std::map<std::string, std::string> meta;
};

// Whether `id` has the form job_id gives every job: 12 lowercase hex digits. Every id read from a
// file (state.json, a job file) is checked with this before it names a path: an id
// "../../../../tmp/x" in state.json made `status` read a heartbeat outside the run (issue 57).
bool is_job_id(std::string_view id);

// A complete job from its resolved parameters: id and canonical text computed here.
Job make_job(const std::string& run, std::size_t index, JobParams params);

// {"id":..,"run":..,"index":..,"params":{canonical},"meta":{..}}; written to a temp file, synced
// and renamed (gridrun::base::write_file_atomic), so a reader never sees half a job file.
std::string job_to_json(const Job& job);
void write_job_file(const std::string& path, const Job& job);
// Throws std::runtime_error naming the file and the offending key. Fills every field of Job.
Job read_job_file(const std::string& path);
// Parses job_to_json's text; `origin` names the source in error messages.
Job job_from_json(const std::string& json, const std::string& origin);

}  // namespace gridrun::jobs
