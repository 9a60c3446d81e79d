// Fuzz targets: one per reader of input gridrun does not control (issue 24). The same functions
// serve libFuzzer (tests/fuzz/fuzz_main.cpp, built with -DGRIDRUN_FUZZ=ON and clang) and the corpus
// replay that every normal build runs (tests/fuzz/test_replay.cpp, ctest label unit).
//
// Contract of a target, for any bytes: no crash, no hang, no leak, and no exception other than
// gridrun's own clear errors. A target returns normally when the reader accepted the input or
// rejected it with std::invalid_argument / std::runtime_error carrying a message (GridError, a
// "file:line: ..." or "path: ..." error). Any other exception (std::out_of_range from an .at(), a
// library's own type, bad_alloc from a size read off the input) escapes, which libFuzzer reports as
// a crash and the replay as a failure.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace gridrun::fuzz {

struct TargetOptions {
  // h5_result only: read through the forked-copy check as `collect` does (true, the replay: proves
  // the guard) or in process (false, a campaign: finds crashes, which the guard would hide).
  bool isolate = true;
};

struct Target {
  const char* name;  // also the folder of its inputs under tests/fuzz/corpus/
  void (*run)(const std::uint8_t* data, std::size_t size, const TargetOptions& opts);
};

// grid, cluster, job_json, state, h5_result, slurm_text, checkpoint
const std::vector<Target>& targets();
const Target* find_target(const std::string& name);

// The checkpoint reader's target (target_checkpoint.cpp: the one file here that includes LibTorch).
void checkpoint(const std::uint8_t* data, std::size_t size, const TargetOptions& opts);
// Writes the input to NAME in this process's scratch folder (removed at exit); returns its path.
std::string write_scratch_file(const std::string& name, const std::uint8_t* d, std::size_t n);

}  // namespace gridrun::fuzz
