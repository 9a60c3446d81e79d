// gridrun-exec's options: every flag in one struct, filled in options.cpp from
// Boost.Program_options and validated right after parsing (docs/cli.md's convention). The flags
// the scheduler passes are gridrun-train's (--job, --out, --resume, --heartbeat, --owner-pid,
// --launched-at), so the one executor launches either program the same way.
#pragma once

#include <optional>
#include <string>
#include <vector>

namespace gridrun::exec {

struct ExecOptions {
  std::string job_file;        // runs/<name>/jobs/<id>.json
  std::string out_dir;         // runs/<name>/results: rank 0 writes <id>.h5 there
  bool resume = false;         // an earlier attempt was interrupted: GRIDRUN_RESUME=1
  std::string heartbeat_file;  // rewritten at most once a second on each step record
  long owner_pid = 0;          // when it is gone, the program is stopped (SIGTERM) and we exit 75
  double launched_at = 0;      // unix time the launcher started (time_launch_s)
  std::string master_addr = "127.0.0.1";
  int master_port = 0;       // MASTER_PORT for torch.distributed; 0: rank 0 of a 1-rank job picks one
  double util_hz = 2;        // /util samples per second
  double stop_grace_s = 30;  // after a forwarded SIGTERM: SIGKILL past this many seconds
};

// nullopt after --help or --version (printed to stdout). Throws std::invalid_argument (exit 2) on a bad flag
// or value, naming the flag.
std::optional<ExecOptions> parse_options(const std::vector<std::string>& args);

}  // namespace gridrun::exec
