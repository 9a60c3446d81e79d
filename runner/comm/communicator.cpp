// The Communicator factory: picks an implementation by name. NCCL exists only in builds where
// cmake/GpuDetect.cmake found CUDA, NCCL and a CUDA LibTorch; asking for it elsewhere is bad input
// (exit 2) with the reason, so a GPU job sent to a CPU-only build fails at start, not mid-run.
#include "comm/comm_impl.hpp"
#include "gridrun/runner/errors.hpp"

namespace gridrun::runner {

bool have_nccl() {
#ifdef GRIDRUN_HAVE_NCCL
  return true;
#else
  return false;
#endif
}

std::unique_ptr<Communicator> make_communicator(const std::string& name, const CommOptions& opts) {
  if (name == "mpi") return comm::make_mpi(opts);
  if (name == "nccl") {
#ifdef GRIDRUN_HAVE_NCCL
    return comm::make_nccl(opts);
#else
    throw BadInput(
        "gridrun-train: device=gpu needs the NCCL communicator, but this gridrun-train was built "
        "without CUDA/NCCL (LibTorch CPU-only or NCCL/CUDA not found at configure time; see "
        "cmake/GpuDetect.cmake and docs/runner.md)");
#endif
  }
  throw BadInput("gridrun-train: unknown communicator '" + name + "' (known: mpi, nccl)");
}

}  // namespace gridrun::runner
