// The one checked-call macro family of runner/comm/ (MPI_CHECK, NCCL_CHECK, CUDA_CHECK): every
// call into MPI, NCCL or the CUDA runtime has its return code checked, and a failure becomes a
// CommError that says which call failed, where (file:line), on which rank and host, and the
// library's own message. Why macros: only a macro sees the call's text and its file and line.
#pragma once

#include <string>

namespace gridrun::runner::comm {

// Throws CommError "FILE:LINE: CALL failed on rank R (HOST): CAUSE"; R is the MPI world rank
// (-1 before MPI_Init).
[[noreturn]] void throw_call_error(const char* call, const char* file, int line, const std::string& cause);

}  // namespace gridrun::runner::comm

// `text` is the call as written (stringized by the library's macro, before macro expansion);
// `describe(rc)` is the library's message for a return code.
#define GRIDRUN_CHECKED_CALL(rc_type, ok, describe, call, text)                                   \
  do {                                                                                            \
    const rc_type gridrun_rc_ = (call);                                                           \
    if (gridrun_rc_ != (ok))                                                                      \
      ::gridrun::runner::comm::throw_call_error(text, __FILE__, __LINE__, describe(gridrun_rc_)); \
  } while (0)
