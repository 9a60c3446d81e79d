// Fuzz targets: one per reader of input gridrun does not control (issue 24). The same functions
// serve libFuzzer (tests/fuzz/fuzz_main.cpp, built with -DGRIDRUN_FUZZ=ON and clang) and the corpus
// replay that every normal build runs (tests/fuzz/test_replay.cpp, ctest label unit).
//
// Contract of a target, for any bytes: no crash, no hang, no leak, and no exception other than
// gridrun's own clear errors. A target returns its verdict: accepted; rejected with a
// std::invalid_argument / std::runtime_error whose message names the input (GridError's
// "fuzz.yaml:3:1: ...", a "path: ..." error; a library's own message that does not say which file
// is not a clear error); or damaged (the forked-copy guard caught a crash or hang of a library).
// Any other exception (std::out_of_range from an .at(), a library's own type such as yaml-cpp's,
// bad_alloc from a size read off the input) escapes, which libFuzzer reports as a crash and the
// replay as a failure. The replay also checks each corpus input's verdict against
// corpus/<target>/EXPECTED, so an input that starts being accepted, or rejected for another reason,
// fails by name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <stdexcept>
#include <string>
#include <vector>

namespace gridrun::fuzz {

struct TargetOptions {
  // h5_result only: read through the forked-copy check as `collect` does (true, the replay: proves
  // the guard) or in process (false, a campaign: finds crashes, which the guard would hide).
  bool isolate = true;
};

enum class Outcome { Accepted, Rejected, Damaged };
const char* to_string(Outcome o);  // "accepted", "rejected", "damaged"

struct Verdict {
  Outcome outcome = Outcome::Accepted;
  std::string message;  // the error, when not accepted (the first one for multi-reader targets)
};

struct Target {
  const char* name;  // also the folder of its inputs under tests/fuzz/corpus/
  Verdict (*run)(const std::uint8_t* data, std::size_t size, const TargetOptions& opts);
};

// Runs one reader and classifies its end (see the contract above): throws std::logic_error for an
// error that does not name `origin` (a substring of the message) or has no message.
template <class Fn>
Verdict judge(const std::string& origin, Fn&& read) {
  Verdict v;
  try {
    read();
    return v;
  } catch (const std::invalid_argument& e) {
    v.message = e.what();
  } catch (const std::runtime_error& e) {
    v.message = e.what();
  }
  if (v.message.find(origin) == std::string::npos)
    throw std::logic_error("an error that does not name " + origin + ": " + v.message);
  // "damaged: reading it crashed ..." (the forked-copy guard), "PATH: damaged: bad CRC-32 ..." (the
  // checkpoint archive check): a damaged file, which the product quarantines and redoes.
  v.outcome = v.message.find("damaged: ") != std::string::npos ? Outcome::Damaged : Outcome::Rejected;
  return v;
}

// The first verdict that is not "accepted" (a target with several readers).
inline Verdict worst(std::initializer_list<Verdict> vs) {
  for (const auto& v : vs)
    if (v.outcome != Outcome::Accepted) return v;
  return {};
}

// grid, cluster, job_json, state, h5_result, slurm_text, checkpoint, model_file, data_file,
// calibration, prediction
const std::vector<Target>& targets();
const Target* find_target(const std::string& name);

// The checkpoint reader's target (target_checkpoint.cpp: the one file here that includes LibTorch).
Verdict checkpoint(const std::uint8_t* data, std::size_t size, const TargetOptions& opts);
// model=torchscript's file reader (target_checkpoint.cpp, with the checkpoint's).
Verdict model_file(const std::uint8_t* data, std::size_t size, const TargetOptions& opts);
// Writes the input to NAME in this process's scratch folder (removed at exit); returns its path.
std::string write_scratch_file(const std::string& name, const std::uint8_t* d, std::size_t n);

}  // namespace gridrun::fuzz
