// See options.hpp.
#include "gridrun/exec/options.hpp"

#include <boost/program_options.hpp>
#include <cmath>
#include <iostream>
#include <stdexcept>

namespace gridrun::exec {

namespace po = boost::program_options;

std::optional<ExecOptions> parse_options(const std::vector<std::string>& args) {
  ExecOptions o;
  po::options_description d(
      "usage: gridrun-exec --job FILE --out DIR [options]\n\n"
      "Runs one rank of a command job (a grid's command:, docs/own-script.md): starts the program\n"
      "with the torch.distributed env:// variables and gridrun's own, records its protocol lines\n"
      "(rank 0) into DIR/<id>.h5, forwards SIGTERM/SIGUSR1. Started by `gridrun run` through\n"
      "mpirun, and by `gridrun submit`'s task scripts through srun or mpirun.\n\n"
      "options");
  const ExecOptions defaults;  // each flag's default is the option struct's
  d.add_options()("help,h", "print this help and exit")("version,V", "print the version and exit")(
      "job", po::value(&o.job_file), "the job file (runs/<name>/jobs/<id>.json); required")(
      "out", po::value(&o.out_dir), "the results folder; rank 0 writes <id>.h5 there; required")(
      "resume", po::bool_switch(&o.resume), "an earlier attempt was interrupted: GRIDRUN_RESUME=1")(
      "heartbeat", po::value(&o.heartbeat_file), "progress file rewritten at most once a second (rank 0)")(
      "owner-pid", po::value(&o.owner_pid)->default_value(defaults.owner_pid),
      "stop the program (SIGTERM) and exit 75 when this process is gone; 0 = none")(
      "launched-at", po::value(&o.launched_at)->default_value(defaults.launched_at),
      "unix time the launcher started, for time_launch_s; 0 = unknown")(
      "master-addr", po::value(&o.master_addr)->default_value(defaults.master_addr),
      "MASTER_ADDR for every rank, with --master-port")(
      "master-port", po::value(&o.master_port)->default_value(defaults.master_port),
      "MASTER_PORT for every rank; 0: a free one, which rank 0 of a multi-rank job publishes with "
      "its address in the job's work folder for the others (needs --launched-at: a Slurm step)")(
      "util-hz", po::value(&o.util_hz)->default_value(defaults.util_hz),
      "utilization samples per second (0.1-100)")(
      "stop-grace", po::value(&o.stop_grace_s)->default_value(defaults.stop_grace_s),
      "seconds after a forwarded SIGTERM before SIGKILL (> 0)")(
      // Accepted for the executor's sake (jobs_per_gpu); a program caps its own memory.
      "gpu-memory-fraction", po::value<double>(), "ignored: the program manages its own GPU memory");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(args)
                  .options(d)
                  .style(po::command_line_style::default_style & ~po::command_line_style::allow_guessing)
                  .run(),
              vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw std::invalid_argument(std::string("gridrun-exec: ") + e.what() + " (see gridrun-exec --help)");
  }
  if (vm.count("version")) {
    std::cout << "gridrun-exec " << GRIDRUN_VERSION << " (" << GRIDRUN_GIT_COMMIT << ")\n";
    return std::nullopt;
  }
  if (vm.count("help")) {
    std::cout << d
              << "\nExit codes: 0 completed, 1 failed, 2 bad input (ours or the program's exit 2),\n"
                 "3 diverged (a non-finite loss), 75 interrupted (SIGTERM/SIGUSR1, owner gone).\n";
    return std::nullopt;
  }
  if (o.job_file.empty()) throw std::invalid_argument("gridrun-exec: --job is required");
  if (o.out_dir.empty()) throw std::invalid_argument("gridrun-exec: --out is required");
  if (o.master_port < 0 || o.master_port > 65535)
    throw std::invalid_argument("gridrun-exec: --master-port must be 0-65535");
  if (!(o.util_hz >= 0.1 && o.util_hz <= 100))
    throw std::invalid_argument("gridrun-exec: --util-hz must be 0.1-100");
  if (!(o.stop_grace_s > 0 && std::isfinite(o.stop_grace_s)))
    throw std::invalid_argument("gridrun-exec: --stop-grace must be > 0");
  if (o.owner_pid < 0) throw std::invalid_argument("gridrun-exec: --owner-pid must be >= 0");
  if (!(o.launched_at >= 0)) throw std::invalid_argument("gridrun-exec: --launched-at must be >= 0");
  return o;
}

}  // namespace gridrun::exec
