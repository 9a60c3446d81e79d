// MPI_CHECK (checked_call.hpp): every MPI call's return code is checked and turned into a
// CommError naming the call, file:line, rank, host and MPI's own error string. Communicators set
// MPI_ERRORS_RETURN so errors reach this check instead of killing the process silently.
#pragma once

// The C API only: without these, Open MPI's mpi.h drags in the deprecated C++ bindings (libmpi_cxx).
#ifndef OMPI_SKIP_MPICXX
#define OMPI_SKIP_MPICXX 1
#endif
#ifndef MPICH_SKIP_MPICXX
#define MPICH_SKIP_MPICXX 1
#endif
#include <mpi.h>

#include <string>

#include "comm/checked_call.hpp"

namespace gridrun::runner::comm {

std::string mpi_error_string(int rc);  // MPI_Error_string

}  // namespace gridrun::runner::comm

#define MPI_CHECK(call) \
  GRIDRUN_CHECKED_CALL(int, MPI_SUCCESS, ::gridrun::runner::comm::mpi_error_string, call, #call)
