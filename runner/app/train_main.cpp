// gridrun-train's process edge: parse options, create the communicator, train (or infer); every exception is
// converted here, once, into an exit code (2 bad input, 1 runtime failure) and, when other ranks
// exist, into MPI_Abort/ncclCommAbort of the whole job so no rank is left waiting in a collective.
#include <exception>
#include <iostream>
#include <memory>

#include "gridrun/runner/communicator.hpp"
#include "gridrun/runner/errors.hpp"
#include "gridrun/runner/options.hpp"
#include "gridrun/runner/signals.hpp"
#include "gridrun/runner/trainer.hpp"

int main(int argc, char** argv) {
  using namespace gridrun::runner;
  RunnerOptions opts;
  try {
    ParseResult pr = parse_options(argc, argv);
    if (pr.help_shown) return kExitCompleted;
    opts = std::move(pr.options);
  } catch (const std::exception& e) {
    std::cerr << e.what() << "\n";
    return kExitBadInput;
  }
  // Before the communicator: a rank that waits in MPI_Init for a peer that never comes must still
  // notice that its owner is gone.
  watch_owner(opts.owner_pid, opts.owner_host);
  std::unique_ptr<Communicator> comm;
  int code = kExitFailure;
  std::string why;
  try {
    comm = make_communicator(opts.job.device == "gpu" ? "nccl" : "mpi",
                             CommOptions{opts.job.comm_timeout_s});
    return opts.job.task == "inference" ? infer(opts, *comm) : train(opts, *comm);
  } catch (const BadInput& e) {
    code = kExitBadInput;
    why = e.what();
  } catch (const std::exception& e) {
    why = std::string("runtime failure: ") + e.what();
  } catch (...) {
    why = "runtime failure: unknown exception";
  }
  if (comm && comm->size() > 1) comm->abort(code, why);  // never returns
  std::cerr << "gridrun-train: " << (comm ? "rank " + std::to_string(comm->rank()) + " (" +
                                                comm->host() + "): " : "")
            << why << "\n";
  return code;
}
