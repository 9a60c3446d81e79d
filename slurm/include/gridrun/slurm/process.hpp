// Running the Slurm client commands (sbatch, squeue, scontrol, sacct, scancel, sinfo).
//
// Why a tiny process helper instead of popen(): we need stdout and stderr separately (sbatch's
// error is the message the user must see), the exit status, no shell quoting of user arguments,
// and no fd or zombie left behind on any path (RAII for pipes and the child).
#pragma once

#include <string>
#include <vector>

namespace gridrun::slurm {

struct ProcessResult {
  int exit_code = -1;     // exit status, or 128 + signal number
  std::string out, err;
  bool started = false;   // false when the program could not be executed (e.g. not installed)
};

// Runs argv[0] (looked up in PATH) with the given arguments, stdin from /dev/null, and waits.
ProcessResult run_process(const std::vector<std::string>& argv);

// Quotes a word for a POSIX shell only when needed (for printing commands and writing scripts).
std::string shell_quote(const std::string& word);

}  // namespace gridrun::slurm
