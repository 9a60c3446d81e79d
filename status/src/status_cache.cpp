// See status.hpp (encode_status): a RunStatus as bytes, for the run's status cache. Every field
// but job_params and run_dir, in declaration order; a decode checks every count and outcome, so a
// damaged cache throws (and is recomputed by the caller), never shows made-up rows.
#include <stdexcept>

#include "gridrun/base/bytes.hpp"
#include "gridrun/status/status.hpp"

namespace gridrun::status {

namespace {

constexpr std::uint64_t kVersion = 3;  // 2: earlier jobs (issue 58); 3: recorded state, attempts, host
constexpr auto kLastOutcome = static_cast<std::uint64_t>(run::JobOutcome::Diverged);

void put_strings(base::ByteWriter& w, const std::vector<std::string>& v) {
  w.u64(v.size());
  for (const auto& s : v) w.str(s);
}

std::vector<std::string> get_strings(base::ByteReader& r) {
  std::vector<std::string> v(r.count(8));
  for (auto& s : v) s = r.str();
  return v;
}

run::JobOutcome get_outcome(base::ByteReader& r) {
  const std::uint64_t v = r.u64();
  if (v > kLastOutcome) throw std::runtime_error("bad job outcome");
  return static_cast<run::JobOutcome>(v);
}

}  // namespace

std::string encode_status(const RunStatus& st) {
  base::ByteWriter w;
  w.u64(kVersion);
  w.str(st.name);
  w.u64(st.jobs.size());
  for (const JobStatusRow& j : st.jobs) {
    w.str(j.id);
    w.u64(static_cast<std::uint64_t>(j.state));
    for (const std::string* s :
         {&j.slurm_id, &j.slurm_state, &j.elapsed, &j.node, &j.disk, &j.reason, &j.eta_source})
      w.str(*s);
    for (int v : {j.exit_code, j.restarts, j.attempts}) w.i64(v);
    put_strings(w, j.attempt_hosts);
    for (std::int64_t v : {j.step, j.total_steps, j.epoch, j.epochs}) w.i64(v);
    for (double v : {j.elapsed_s, j.eta_s, j.predicted_eta_s}) w.f64(v);
    put_strings(w, j.params);
    w.u64(j.earlier ? 1 : 0);
    w.u64(static_cast<std::uint64_t>(j.recorded_state));
    w.i64(j.recorded_attempts);
    w.str(j.recorded_host);
  }
  w.u64(st.counts.size());
  for (const auto& [outcome, n] : st.counts) {
    w.u64(static_cast<std::uint64_t>(outcome));
    w.u64(n);
  }
  w.u64(st.slurm_queried ? 1 : 0);
  w.u64(st.slurm_answered ? 1 : 0);
  put_strings(w, st.collect_ids);
  w.str(st.collect_state);
  put_strings(w, st.damaged);
  put_strings(w, st.varying);
  w.u64(st.has_prediction ? 1 : 0);
  put_strings(w, st.warnings);
  w.str(st.resume_command);
  w.u64(st.earlier_hidden);
  put_strings(w, st.notes);
  return std::move(w.bytes());
}

RunStatus decode_status(std::string_view bytes) {
  base::ByteReader r(bytes);
  if (r.u64() != kVersion) throw std::runtime_error("status cache of another version");
  RunStatus st;
  st.name = r.str();
  st.jobs.resize(r.count(64));
  for (JobStatusRow& j : st.jobs) {
    j.id = r.str();
    j.state = get_outcome(r);
    for (std::string* s :
         {&j.slurm_id, &j.slurm_state, &j.elapsed, &j.node, &j.disk, &j.reason, &j.eta_source})
      *s = r.str();
    for (int* v : {&j.exit_code, &j.restarts, &j.attempts}) *v = static_cast<int>(r.i64());
    j.attempt_hosts = get_strings(r);
    for (std::int64_t* v : {&j.step, &j.total_steps, &j.epoch, &j.epochs}) *v = r.i64();
    for (double* v : {&j.elapsed_s, &j.eta_s, &j.predicted_eta_s}) *v = r.f64();
    j.params = get_strings(r);
    j.earlier = r.u64() != 0;
    j.recorded_state = get_outcome(r);
    j.recorded_attempts = static_cast<int>(r.i64());
    j.recorded_host = r.str();
  }
  for (std::size_t n = r.count(16); n > 0; --n) {
    const run::JobOutcome o = get_outcome(r);
    st.counts[o] = static_cast<std::size_t>(r.u64());
  }
  st.slurm_queried = r.u64() != 0;
  st.slurm_answered = r.u64() != 0;
  st.collect_ids = get_strings(r);
  st.collect_state = r.str();
  st.damaged = get_strings(r);
  st.varying = get_strings(r);
  st.has_prediction = r.u64() != 0;
  st.warnings = get_strings(r);
  st.resume_command = r.str();
  st.earlier_hidden = static_cast<std::size_t>(r.u64());
  st.notes = get_strings(r);
  if (!r.done()) throw std::runtime_error("trailing bytes in the status cache");
  for (const JobStatusRow& j : st.jobs)
    if (j.params.size() != st.varying.size())
      throw std::runtime_error("a row without every varying parameter");
  return st;
}

bool status_is_settled(const RunStatus& st) {
  if (st.slurm_queried) return false;
  for (const JobStatusRow& j : st.jobs)
    if (!j.slurm_id.empty() || j.state == run::JobOutcome::Running || run::is_queued(j.state)) return false;
  return true;
}

}  // namespace gridrun::status
