// The run loop of `gridrun run`, private to the scheduler (run_grid.hpp is the public call).
//
// Why a class: the loop's steps (reconcile the run directory, launch what the placement engine
// starts, record an exit, react to a signal, close a phase) share the run's state, the progress
// output and the phase's engine; as members they stay small and each can be read on its own.
#pragma once

#include <array>
#include <cstddef>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "executor.hpp"
#include "grid_plan.hpp"
#include "gridrun/jobs/grid.hpp"
#include "gridrun/results/run_reader.hpp"
#include "gridrun/run/prepare.hpp"
#include "gridrun/scheduler/placement.hpp"
#include "gridrun/scheduler/run_options.hpp"
#include "idle_places.hpp"
#include "progress.hpp"
#include "worker_pool.hpp"

namespace gridrun::scheduler {

// Measured durations (wall_s) of the jobs whose results files are finished, by id.
using Durations = std::unordered_map<std::string, double>;
// One read of the results folder (run_reader.hpp; through its index, so a finished run reads no
// file).
Durations measured_durations(results::ResultsFolder& folder, const std::vector<jobs::Job>& jobs);
// A job's duration: measured when it has finished before (from its results file), else the cost
// model's estimate; `from_results` says which.
double estimate_for(const jobs::Job& job, const Durations& measured, const CostModel& cost,
                    bool* from_results);

class RunLoop {
 public:
  // `train_bin`: checked by the caller. Throws run::RunLocked when the run directory is in use.
  RunLoop(const GridPlan& plan, const RunOptions& opts, std::string train_bin, std::ostream& out);
  ~RunLoop();
  RunLoop(const RunLoop&) = delete;
  RunLoop& operator=(const RunLoop&) = delete;

  RunOutcome run();

 private:
  struct Live;
  struct PhaseRun;

  void stop_leftovers();
  void reconcile();
  // state.json, unless it already holds state_ (prepared_.on_disk, until the first write): a run
  // with nothing to do writes nothing (100,000 jobs' state is seconds of JSON).
  void save_state();
  void reconcile_job(std::size_t i);
  bool open_phase(const std::string& value);
  void launch_ready();
  void launch(const Start& s);
  void on_exit(std::size_t i, int code);
  void on_signal();
  void watchdog(const std::vector<std::pair<std::size_t, int>>& ended);
  void close_phase(const std::string& value);
  RunOutcome summary();

  const GridPlan& plan_;
  const jobs::Expansion& ex_;
  const RunOptions& o_;
  std::string train_;
  // This `gridrun run`'s sitting (run-<start ms>-<pid>), recorded in every attempt it launches:
  // a phase whose jobs ran in more than one sitting is not a measurement (report/phases.hpp).
  std::string sitting_;
  std::ostream& out_;
  run::RunDir rd_;   // as given (messages)
  run::RunDir ard_;  // absolute (what launched processes get)
  std::unique_ptr<Executor> exec_;
  WorkerPool pool_;  // --launch warm; before phase_, whose jobs' handles share its workers
  // Where pool_'s idle workers wait, as the phase's engine prefers them (launch_ready).
  IdlePlaces idle_places_;
  run::PreparedRun prepared_;
  run::RunState& state_;
  // Each job's record in state_ (run::records_of), in the order of ex_.jobs.
  std::vector<run::JobRecord*> records_;
  std::vector<char> to_run_, resume_;
  std::vector<char> cold_;  // lost in a warm worker: its next attempt is cold
  // The results folder with its index, read once at reconcile and once per ended job; the index is
  // written with state.json, so a `status` after the run reads no job file.
  std::unique_ptr<results::ResultsFolder> folder_;
  // Reconcile's reads of the job files that exist, and each job's final and .partial file among
  // them (kNoRead: none).
  static constexpr std::size_t kNoRead = static_cast<std::size_t>(-1);
  std::vector<results::JobFileRead> disk_;
  std::vector<std::array<std::size_t, 2>> disk_of_;
  Durations measured_;           // wall_s of finished jobs, by id
  double index_flushed_at_ = 0;  // progress time of the last index write
  bool fresh_reads_ = false;     // reconcile read or quarantined a file
  std::size_t skipped_ = 0;
  std::unique_ptr<Progress> progress_;
  std::unique_ptr<PhaseRun> phase_;
  bool stopping_ = false, killing_ = false;
};

}  // namespace gridrun::scheduler
