// Private to runner/comm/: constructors of the named Communicator implementations, declared
// without MPI/NCCL types so that communicator.cpp (the factory) stays free of those headers.
#pragma once

#include <memory>

#include "gridrun/runner/communicator.hpp"

namespace gridrun::runner::comm {

std::unique_ptr<Communicator> make_mpi(const CommOptions& opts);
#ifdef GRIDRUN_HAVE_NCCL
std::unique_ptr<Communicator> make_nccl(const CommOptions& opts);
#endif

}  // namespace gridrun::runner::comm
