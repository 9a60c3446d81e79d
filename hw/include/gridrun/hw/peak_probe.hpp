// `gridrun probe`: a short measurement of this machine's CPU compute and memory roofs, used by the
// report's roofline for CPU jobs (GPU roofs come from a built-in table, see roofline.hpp).
//
// Why our own kernels instead of a BLAS: the login-node binary links no BLAS, and the roofline
// only needs the right order of magnitude. The GEMM is a cache-blocked fp32 matmul that the
// compiler vectorises; it reaches a fraction of what MKL/OpenBLAS (and LibTorch) reach on the same
// cores, so its figure is a LOWER BOUND of the true peak, and a CPU job may sit above this roof.
// The bandwidth test is a STREAM-like triad a[i] = b[i] + s*c[i] over arrays far larger than the
// caches, counting 24 bytes per element (STREAM's convention, write-allocate traffic not counted).
#pragma once

#include <functional>
#include <string>

namespace gridrun::hw {

struct MachineProbeOptions {
  double seconds = 4.0;             // total budget, split over the four measurements
  int threads = 0;                  // 0: every CPU this process may run on
  int gemm_n = 512;                 // square matrix size (3 x n^2 floats must fit in memory)
  long long triad_elems = 1 << 23;  // doubles per triad array (3 arrays; 8 Mi -> 192 MiB)
};

struct ProbeResult {
  std::string created, hostname, cpu_model;
  int threads = 1, gemm_n = 0;
  long long triad_elems = 0;
  double gemm_gflops_1t = 0, gemm_gflops_all = 0;  // best repetition, fp32 FLOP/s / 1e9
  double triad_gbs_1t = 0, triad_gbs_all = 0;      // best repetition, bytes/s / 1e9
};

// Runs the four measurements (GEMM and triad, one thread then all threads). `progress` gets a
// line per measurement (may be empty). Throws std::invalid_argument on bad options.
ProbeResult run_probe(const MachineProbeOptions& opts,
                      const std::function<void(const std::string&)>& progress);

// One JSON object, keys as the struct fields (documented in docs/report.md).
std::string probe_to_json(const ProbeResult& r);
// Reads a file written by probe_to_json. Throws std::runtime_error naming the path and key.
ProbeResult read_probe(const std::string& path);

// ~/.cache/gridrun/probe.json ($XDG_CACHE_HOME/gridrun/probe.json when set; the path only, the
// file may not exist).
std::string default_probe_path();

}  // namespace gridrun::hw
