// `gridrun cancel` of a local run: ask the `gridrun run` that holds the run's lock to stop as on
// Ctrl-C (its jobs checkpoint and stop), wait for it to let go of the run, and say what it did.
//
// Why a signal to the holder and not to the jobs: the run loop owns its jobs (it records their
// outcomes in state.json, retries, flushes the results index); stopping them behind its back would
// leave it to record failures. SIGTERM is what its signal loop treats as the first Ctrl-C
// (run_loop.cpp): no new launches, every running job is asked to checkpoint and exits 75, the run
// records them interrupted and exits. A Slurm run is cancelled by slurm::cancel_run instead.
#pragma once

#include <iosfwd>
#include <string>
#include <vector>

#include "gridrun/run/run_dir.hpp"

namespace gridrun::status {

struct LocalCancelOptions {
  double timeout_s = 120;  // how long to wait for the holder to exit
};

struct LocalCancelResult {
  enum class Outcome {
    NotRunning,  // nobody holds the run's lock: nothing to stop
    Stopped,     // the holder stopped and let go within the time limit
    TimedOut,    // it was asked to stop but still held the run at the time limit
    Elsewhere,   // the lock file names another host
    // The lock is held, but the process its file names is not proven to be the gridrun holding
    // it (a forged or stale record, an older gridrun's record, another user's process): nothing
    // was signalled. `why` says which check failed.
    Unverified,
  };
  Outcome outcome = Outcome::NotRunning;
  long pid = 0;
  std::string host;
  // The jobs it was running when asked, and those of them state.json then records interrupted.
  std::vector<std::string> running, interrupted;
  // The holder's own command line (shell-quoted) and working directory: what resumes the run.
  std::string command, cwd;
  std::string why;  // Unverified: the check that failed
};

// Signals only the verified holder (cancel.cpp, unverified_because): the lock held, the PID's start
// time the one recorded with it, the process holding the lock itself; and signals it through a
// pidfd taken before those checks. Never throws for the holder's sake (a holder that ends meanwhile
// is "stopped").
LocalCancelResult cancel_local_run(const run::RunDir& dir, const LocalCancelOptions& opts);

// One or two lines saying what cancel_local_run did (the outcome, the interrupted jobs, how to resume).
void print_local_cancel(const run::RunDir& dir, const LocalCancelResult& res, const LocalCancelOptions& opts,
                        std::ostream& os);

}  // namespace gridrun::status
