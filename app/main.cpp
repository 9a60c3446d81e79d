// `gridrun` entry point: dispatches to a subcommand. Exceptions that escape a subcommand are turned
// into exit codes here, once: std::invalid_argument (bad input) -> 2, anything else -> 1.
// The command-line convention (usage errors on stderr with exit 2, -h/--help on stdout with exit 0,
// -V/--version) is docs/cli.md.
#include <cstdio>
#include <exception>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.hpp"
#include "gridrun/jobs/suggest.hpp"

namespace {

struct Command {
  const char* name;
  int (*fn)(const gridrun::app::Args&);
  const char* help;
};

const Command kCommands[] = {
    {"plan", gridrun::app::cmd_plan, "validate a grid file and print its expanded jobs"},
    {"run", gridrun::app::cmd_run, "run a grid on this machine with mpirun, then collect and report"},
    {"simulate", gridrun::app::cmd_simulate, "compute a grid's schedule on a cluster without launching"},
    {"calibrate", gridrun::app::cmd_calibrate, "measure a grid's configurations briefly, for simulate"},
    {"submit", gridrun::app::cmd_submit, "submit a grid to Slurm as sbatch job arrays"},
    {"status", gridrun::app::cmd_status, "show the state of a run's jobs (local or Slurm)"},
    {"cancel", gridrun::app::cmd_cancel, "stop a local run, or cancel a run's Slurm jobs"},
    {"collect", gridrun::app::cmd_collect, "build RUN_DIR/results.h5 from the per-job files"},
    {"report", gridrun::app::cmd_report, "print scaling, speed-up, convergence and utilization tables"},
    {"ls", gridrun::app::cmd_ls, "list the runs in a folder: jobs done/failed/running, last change, verdict"},
    {"export", gridrun::app::cmd_export, "write a run's steps, epochs, jobs or phases as one CSV/JSON table"},
    {"probe", gridrun::app::cmd_probe, "measure this CPU's GEMM and memory-bandwidth roofs (roofline)"},
    {"worker-msg", gridrun::app::cmd_worker_msg,
     "write or check a warm worker's message (the Slurm task body's)"},
    {"job-shape", gridrun::app::cmd_job_shape,
     "print a job's ranks, threads and nodes (the Slurm task body's)"},
};

void usage(std::ostream& os) {
  os << "gridrun " GRIDRUN_VERSION " (" GRIDRUN_GIT_COMMIT
        ") - experiment grids for CPU and multi-GPU training\n\n"
        "usage: gridrun <command> [arguments] [options]   (gridrun <command> --help for its own)\n"
        "       gridrun -h | --help | -V | --version\n\ncommands:\n";
  for (const auto& c : kCommands) {
    char line[160];
    std::snprintf(line, sizeof line, "  %-10s %s\n", c.name, c.help);
    os << line;
  }
  os << "\nExit codes: 0 success, 1 a runtime failure, 2 bad input (message names file:line:col and key).\n";
}

}  // namespace

int main(int argc, char** argv) {
  // No command is a usage error (stderr, 2); asking for help is not (stdout, 0).
  if (argc < 2) {
    usage(std::cerr);
    return 2;
  }
  const std::string first = argv[1];
  if (first == "--help" || first == "-h" || first == "help") {
    usage(std::cout);
    return 0;
  }
  if (first == "--version" || first == "-V") {
    std::cout << "gridrun " GRIDRUN_VERSION " (" GRIDRUN_GIT_COMMIT ")\n";
    return 0;
  }
  gridrun::app::Args args(argv + 2, argv + argc);
  std::vector<std::string> names;
  for (const auto& c : kCommands) {
    names.push_back(c.name);
    if (first != c.name) continue;
    try {
      return c.fn(args);
    } catch (const std::invalid_argument& e) {
      std::cerr << "gridrun " << c.name << ": " << e.what() << "\n";
      return 2;
    } catch (const std::exception& e) {
      std::cerr << "gridrun " << c.name << ": error: " << e.what() << "\n";
      return 1;
    }
  }
  const std::string hint = first.rfind('-', 0) == 0 ? "" : gridrun::jobs::closest_name(first, names);
  std::cerr << "gridrun: unknown " << (first.rfind('-', 0) == 0 ? "option" : "command") << " '" << first
            << "'" << (hint.empty() ? "" : "; did you mean '" + hint + "'?") << "\n\n";
  usage(std::cerr);
  return 2;
}
