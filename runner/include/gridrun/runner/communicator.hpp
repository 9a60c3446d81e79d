// The collective-communication interface the training loop talks to; implementations are chosen by
// name ("mpi" for CPU tensors, "nccl" for CUDA tensors) in runner/comm/, the only folder that
// includes MPI or NCCL headers.
//
// Why asynchronous work handles: gradient buckets are allreduced while backward still runs
// (overlap), and the optimizer waits only for what is still outstanding. Why every wait has a
// deadline: a rank that died or hung must not leave the others blocked forever; a wait past
// `timeout_s` prints who waited for what and aborts the whole job (MPI_Abort / ncclCommAbort).
// Host-side small collectives (metrics, the stop flag, hostnames) are blocking and also bounded by
// the same timeout.
#pragma once

#include <ATen/core/Tensor.h>

#include <memory>
#include <string>
#include <vector>

namespace gridrun::runner {

// One outstanding collective.
class Work {
 public:
  virtual ~Work() = default;
  // Blocks until the operation finished; aborts the job past the communicator's timeout; rethrows
  // a CommError raised by the operation.
  virtual void wait() = 0;
  // Seconds the operation itself took (valid after wait()).
  virtual double seconds() const = 0;
};

struct CommOptions {
  double timeout_s = 300.0;  // a wait longer than this aborts the job
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual std::string name() const = 0;  // "mpi" | "nccl"
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_rank() const = 0;               // rank among this node's ranks
  virtual std::string host() const = 0;             // this rank's hostname
  virtual std::string library_version() const = 0;  // e.g. "Open MPI v4.1.4 ..." or "NCCL 2.19.3"

  // In-place sum over ranks; the tensor must stay alive and untouched until wait() returns.
  virtual std::shared_ptr<Work> allreduce_sum(const at::Tensor& t) = 0;
  // In-place broadcast from `root` (blocking).
  virtual void broadcast(const at::Tensor& t, int root) = 0;
  virtual void barrier() = 0;
  // Small host-side arrays (metrics, flags): blocking, result on every rank.
  virtual std::vector<double> allreduce_sum(const std::vector<double>& v) = 0;
  virtual std::vector<double> allreduce_max(const std::vector<double>& v) = 0;
  // Concatenation of every rank's array in rank order on `root` (all arrays have the same length);
  // empty on other ranks.
  virtual std::vector<double> gather(const std::vector<double>& mine, int root) = 0;
  // Every rank's string (e.g. hostname), on every rank.
  virtual std::vector<std::string> allgather_strings(const std::string& mine) = 0;
  // Ends the whole job now with `code`, after printing `why` with rank and host. Never returns.
  [[noreturn]] virtual void abort(int code, const std::string& why) = 0;
};

// Creates the communicator `name` ("mpi" or "nccl"); initialises MPI if needed. Throws BadInput for
// an unknown name or for "nccl" in a build without NCCL (message says why).
std::unique_ptr<Communicator> make_communicator(const std::string& name, const CommOptions& opts);
// True when this binary was built with the NCCL communicator.
bool have_nccl();

}  // namespace gridrun::runner
