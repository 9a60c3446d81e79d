// libFuzzer entry for one target, chosen at compile time (GRIDRUN_FUZZ_TARGET, one executable per
// target: bench/fuzz/run.sh builds and runs them). Reads in process (TargetOptions::isolate false)
// so that a crash is the fuzzer's finding, not a "damaged" message; fuzz_h5_guarded alone reads
// through the guard, as gridrun does.
#include <cstdio>
#include <cstdlib>

#include "targets.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const gridrun::fuzz::Target* target = [] {
    const auto* t = gridrun::fuzz::find_target(GRIDRUN_FUZZ_TARGET);
    if (!t) {
      std::fprintf(stderr, "fuzz: no target %s\n", GRIDRUN_FUZZ_TARGET);
      std::abort();
    }
    return t;
  }();
  gridrun::fuzz::TargetOptions o;
#ifdef GRIDRUN_FUZZ_ISOLATE
  o.isolate = true;  // fuzz_h5_guarded: the product's path, a crash of libhdf5 stays in the child
#else
  o.isolate = false;
#endif
  target->run(data, size, o);
  return 0;
}
