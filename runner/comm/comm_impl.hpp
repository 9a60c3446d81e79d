// Private to runner/comm/: constructors of the named Communicator implementations, declared
// without MPI/NCCL types so that communicator.cpp (the factory) stays free of those headers, and
// what the implementations share.
#pragma once

#include <initializer_list>
#include <memory>
#include <string>
#include <utility>

#include "gridrun/runner/communicator.hpp"
#include "gridrun/runner/errors.hpp"

namespace gridrun::runner::comm {

std::unique_ptr<Communicator> make_mpi(const CommOptions& opts);
#ifdef GRIDRUN_HAVE_NCCL
std::unique_ptr<Communicator> make_nccl(const CommOptions& opts);
#endif

// The library's element type for a tensor, looked up in the dtypes that library supports
// (`table`); any other dtype is a CommError "WHO: unsupported tensor dtype D (SUPPORTED)".
template <class LibType>
LibType dtype_for(const at::Tensor& t, std::initializer_list<std::pair<at::ScalarType, LibType>> table,
                  const std::string& who, const std::string& supported) {
  for (const auto& [dtype, lib] : table)
    if (dtype == t.scalar_type()) return lib;
  throw CommError(who + ": unsupported tensor dtype " + std::string(c10::toString(t.scalar_type())) + " (" +
                  supported + ")");
}

}  // namespace gridrun::runner::comm
