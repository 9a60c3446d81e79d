// SIGTERM/SIGUSR1 handling: the handler only sets a flag; the training loop reads it at the next step
// boundary, all ranks agree through an allreduce, write a checkpoint and exit with 75. Slurm sends
// SIGTERM before a time limit kill, `gridrun` sends it on cancel, and Open MPI's mpirun forwards
// SIGUSR1 to all ranks.
#pragma once

namespace gridrun::runner {

class StopSignal {
 public:
  static void install();      // SIGTERM and SIGUSR1 -> flag (idempotent)
  static int received();      // 0 if none, else the signal number
  static void clear();        // after a handled stop (tests)
};

}  // namespace gridrun::runner
