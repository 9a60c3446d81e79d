// MPI_CHECK: every MPI call's return code is checked and turned into a CommError that says which
// call failed, where (file:line), on which rank and host, and MPI's own error string. Communicators
// set MPI_ERRORS_RETURN so errors reach this check instead of killing the process silently.
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

namespace gridrun::runner::comm {

std::string this_host();
[[noreturn]] void throw_mpi_error(int rc, const char* call, const char* file, int line);

}  // namespace gridrun::runner::comm

#define MPI_CHECK(call)                                                               \
  do {                                                                                \
    int gridrun_mpi_rc_ = (call);                                                     \
    if (gridrun_mpi_rc_ != MPI_SUCCESS)                                               \
      ::gridrun::runner::comm::throw_mpi_error(gridrun_mpi_rc_, #call, __FILE__, __LINE__); \
  } while (0)
