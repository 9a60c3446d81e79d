// gridrun-exec's process edge: options, then one rank of a command job; every exception becomes an
// exit code here, once (2 bad input, 1 runtime failure), with one line on stderr.
#include <exception>
#include <iostream>
#include <stdexcept>
#include <string>
#include <vector>

#include "gridrun/exec/options.hpp"
#include "gridrun/run/exit_codes.hpp"
#include "job_run.hpp"

int main(int argc, char** argv) {
  try {
    const auto o = gridrun::exec::parse_options(std::vector<std::string>(argv + 1, argv + argc));
    if (!o) return 0;
    return gridrun::exec::run_job(*o);
  } catch (const std::invalid_argument& e) {
    std::cerr << e.what() << "\n";
    return gridrun::run::kExitBadInput;
  } catch (const std::exception& e) {
    std::cerr << "gridrun-exec: " << e.what() << "\n";
    return gridrun::run::kExitFailure;
  }
}
