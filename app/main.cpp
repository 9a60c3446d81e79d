// `gridrun` entry point: dispatches to a subcommand. Exceptions that escape a subcommand are turned
// into exit codes here, once: std::invalid_argument (bad input) -> 2, anything else -> 1.
#include <cstdio>
#include <cstring>
#include <exception>
#include <iostream>
#include <stdexcept>
#include <string>

#include "commands.hpp"

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
    {"cancel", gridrun::app::cmd_cancel, "cancel a run's Slurm jobs"},
    {"collect", gridrun::app::cmd_collect, "build RUN_DIR/results.h5 from the per-job files"},
    {"report", gridrun::app::cmd_report, "print scaling, speed-up, convergence and utilization tables"},
    {"export", gridrun::app::cmd_export, "write a run's steps, epochs, jobs or phases as one CSV/JSON table"},
    {"probe", gridrun::app::cmd_probe, "measure this CPU's GEMM and memory-bandwidth roofs (roofline)"},
};

void usage(std::ostream& os) {
  os << "gridrun " GRIDRUN_VERSION " (" GRIDRUN_GIT_COMMIT
        ") - experiment grids for CPU and multi-GPU training\n\n"
        "usage: gridrun <command> [options]   (gridrun <command> --help for its options)\n\ncommands:\n";
  for (const auto& c : kCommands) {
    char line[160];
    std::snprintf(line, sizeof line, "  %-10s %s\n", c.name, c.help);
    os << line;
  }
  os << "\nExit codes: 0 success, 1 a runtime failure, 2 bad input (message names file:line:col and key).\n";
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") ||
      !std::strcmp(argv[1], "help")) {
    usage(std::cout);
    return argc < 2 ? 2 : 0;
  }
  if (!std::strcmp(argv[1], "--version")) {
    std::cout << "gridrun " GRIDRUN_VERSION " (" GRIDRUN_GIT_COMMIT ")\n";
    return 0;
  }
  gridrun::app::Args args(argv + 2, argv + argc);
  for (const auto& c : kCommands) {
    if (std::strcmp(argv[1], c.name) != 0) continue;
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
  std::cerr << "gridrun: unknown command '" << argv[1] << "'\n\n";
  usage(std::cerr);
  return 2;
}
