// Reading a job file in this process, shared by the reader, the writer (finish) and the run
// reader; not installed, not a public API.
#pragma once

#include <hdf5.h>

#include <string>
#include <vector>

#include "gridrun/base/spawn.hpp"
#include "gridrun/results/format.hpp"

namespace gridrun::results::detail {

// Reads a job from an already-open file id (used by the reader and by JobWriter::finish).
JobData read_open_job(hid_t file, const std::string& path, const ReadOptions& opts);

// Opens (plain, SWMR, or a cleared private copy: see reader.hpp) and reads a job file in this
// process, with no isolation: for the guarded child of the run reader and for read_job.
JobData read_job_here(const std::string& path, const ReadOptions& opts);

// Why a guarded read failed, as every reader of job files and the index words it: a copy that
// gave no answer (crashed, hung, exited inside libhdf5) makes the file "damaged: reading it ...";
// otherwise the read's own message, on one line.
std::string guarded_read_failure(const base::IsolatedRun& got);

}  // namespace gridrun::results::detail
