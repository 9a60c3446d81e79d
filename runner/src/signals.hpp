// SIGTERM/SIGUSR1 handling: the handler only sets a flag; the training loop reads it at the next step
// boundary, all ranks agree through an allreduce, write a checkpoint and exit with 75. Slurm sends
// SIGTERM before a time limit kill, `gridrun` sends it on cancel, and Open MPI's mpirun forwards
// SIGUSR1 to all ranks.
//
// The owner watch sets the same flag when the launcher is gone: a SIGKILLed `gridrun run` cannot
// tell its jobs anything, and mpirun (own process group) outlives it, so without the watch the
// ranks would train on unowned, holding cores nobody schedules any more.
#pragma once

#include <string>

namespace gridrun::runner {

class StopSignal {
 public:
  static void install();  // SIGTERM and SIGUSR1 -> flag (idempotent)
  static int received();  // 0 if none, else the signal number
  static void clear();    // after a handled stop (tests)
};

// Watches process `pid` from a detached thread (pidfd + poll: woken by the exit itself, no
// polling). When it is gone, sets the stop flag as SIGHUP would; if the process is still alive
// `grace_s` later (a rank stuck where the flag is never read), it exits 1 so mpirun ends the job.
// `pid` <= 0, or `owner_host` non-empty and not this host's name: nothing is watched.
void watch_owner(long pid, const std::string& owner_host, double grace_s = 30.0);

}  // namespace gridrun::runner
