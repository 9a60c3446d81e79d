// `gridrun probe` kernels: a register-blocked fp32 GEMM and a STREAM-like triad, each run once on
// one thread and once on every allowed CPU, keeping the best repetition (see peak_probe.hpp for why
// these are lower bounds and how bytes are counted).
//
// The GEMM micro-kernel keeps a 4 x 16 block of C in registers (GCC/Clang vector extensions). On
// x86-64 the same body is compiled twice, for AVX2+FMA and for the baseline, and picked at run
// time from the CPU's features: the binary stays portable across cluster nodes (unlike
// -march=native), and feature checks work on VMs whose CPU model is generic (target_clones'
// "arch=" clones check the model and fall back to the slow baseline there).
#include <sched.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <utility>
#include <vector>

#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/host.hpp"
#include "gridrun/base/json.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/hw/peak_probe.hpp"

namespace gridrun::hw {

namespace fs = std::filesystem;

namespace {

using Clock = std::chrono::steady_clock;
typedef float v8 __attribute__((vector_size(32)));

// C[r0:r1, :] += A[r0:r1, :] * B, all n x n row-major. A KB x NR panel of B is first copied to a
// contiguous buffer: read in place, its rows are n floats apart, and for power-of-two n they all
// map to the same few L1 sets and evict each other.
__attribute__((always_inline)) inline void gemm_body(const float* A, const float* B, float* C, int n, int r0,
                                                     int r1) {
  constexpr int KB = 128, MR = 4, NR = 16;
  alignas(64) float panel[KB * NR];
  for (int k0 = 0; k0 < n; k0 += KB) {
    const int kn = std::min(n, k0 + KB) - k0;
    for (int j = 0; j < n; j += NR) {
      const int nr = std::min(NR, n - j);
      for (int k = 0; k < kn; ++k)
        for (int jj = 0; jj < NR; ++jj) panel[k * NR + jj] = jj < nr ? B[(k0 + k) * n + j + jj] : 0.0f;
      for (int i = r0; i < r1; i += MR) {
        const int mr = std::min(MR, r1 - i);
        if (mr == MR && nr == NR) {
          v8 c[MR][2];
          for (int r = 0; r < MR; ++r) {
            std::memcpy(&c[r][0], C + static_cast<std::ptrdiff_t>(i + r) * n + j, sizeof(v8));
            std::memcpy(&c[r][1], C + static_cast<std::ptrdiff_t>(i + r) * n + j + 8, sizeof(v8));
          }
          for (int k = 0; k < kn; ++k) {
            v8 b0, b1;
            std::memcpy(&b0, panel + static_cast<std::ptrdiff_t>(k) * NR, sizeof(v8));
            std::memcpy(&b1, panel + static_cast<std::ptrdiff_t>(k) * NR + 8, sizeof(v8));
            for (int r = 0; r < MR; ++r) {
              const float a = A[(i + r) * n + k0 + k];
              c[r][0] += a * b0;
              c[r][1] += a * b1;
            }
          }
          for (int r = 0; r < MR; ++r) {
            std::memcpy(C + static_cast<std::ptrdiff_t>(i + r) * n + j, &c[r][0], sizeof(v8));
            std::memcpy(C + static_cast<std::ptrdiff_t>(i + r) * n + j + 8, &c[r][1], sizeof(v8));
          }
        } else {
          for (int r = i; r < i + mr; ++r)
            for (int k = 0; k < kn; ++k)
              for (int jj = 0; jj < nr; ++jj) C[r * n + j + jj] += A[r * n + k0 + k] * panel[k * NR + jj];
        }
      }
    }
  }
}

void gemm_baseline(const float* A, const float* B, float* C, int n, int r0, int r1) {
  gemm_body(A, B, C, n, r0, r1);
}

#if defined(__x86_64__) && defined(__GNUC__)
__attribute__((target("avx2,fma"))) void gemm_avx2(const float* A, const float* B, float* C, int n, int r0,
                                                   int r1) {
  gemm_body(A, B, C, n, r0, r1);
}
#endif

void gemm_rows(const float* A, const float* B, float* C, int n, int r0, int r1) {
#if defined(__x86_64__) && defined(__GNUC__)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) return gemm_avx2(A, B, C, n, r0, r1);
#endif
  gemm_baseline(A, B, C, n, r0, r1);
}

void triad(double* a, const double* b, const double* c, double s, long long lo, long long hi) {
  for (long long i = lo; i < hi; ++i) a[i] = b[i] + s * c[i];
}

int allowed_cpus() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

// Runs fn(t) on `threads` threads (t = 0..threads-1) and waits for all of them.
template <class Fn>
void parallel(int threads, Fn fn) {
  if (threads == 1) {
    fn(0);
    return;
  }
  std::vector<std::thread> pool;
  for (int t = 0; t < threads; ++t) pool.emplace_back(fn, t);
  for (auto& th : pool) th.join();
}

// Repeats `once` (returning the work it did) for at least `budget_s` and at least 3 times;
// returns the best rate (work per second).
template <class Once>
double best_rate(double budget_s, Once once) {
  double best = 0;
  const auto start = Clock::now();
  for (int rep = 0;; ++rep) {
    const auto t0 = Clock::now();
    const double work = once();
    const double s = std::chrono::duration<double>(Clock::now() - t0).count();
    if (s > 0) best = std::max(best, work / s);
    if (rep >= 2 && std::chrono::duration<double>(Clock::now() - start).count() >= budget_s) break;
  }
  return best;
}

double gemm_gflops(int n, int threads, double budget_s) {
  const std::size_t nn = static_cast<std::size_t>(n) * n;
  std::vector<float> A(nn), B(nn), C(nn, 0.0f);
  for (std::size_t k = 0; k < nn; ++k) {
    A[k] = static_cast<float>((k % 7) + 1) * 0.01f;
    B[k] = static_cast<float>((k % 5) + 1) * 0.01f;
  }
  const double flops = 2.0 * n * static_cast<double>(n) * n;
  double rate = best_rate(budget_s, [&] {
    parallel(threads, [&](int t) {
      const int r0 = n * t / threads, r1 = n * (t + 1) / threads;
      gemm_rows(A.data(), B.data(), C.data(), n, r0, r1);
    });
    return flops;
  });
  // Keep the result observable so the work cannot be optimised away.
  if (!std::isfinite(C[nn / 2])) throw std::runtime_error("probe: GEMM produced a non-finite value");
  return rate / 1e9;
}

double triad_gbs(long long elems, int threads, double budget_s) {
  std::unique_ptr<double[]> a(new double[elems]), b(new double[elems]), c(new double[elems]);
  // First touch by the thread that later streams the slice (NUMA placement).
  parallel(threads, [&](int t) {
    const long long lo = elems * t / threads, hi = elems * (t + 1) / threads;
    for (long long i = lo; i < hi; ++i) {
      a[i] = 0.0;
      b[i] = 1.0;
      c[i] = 2.0;
    }
  });
  const double bytes = 24.0 * static_cast<double>(elems);
  double rate = best_rate(budget_s, [&] {
    parallel(threads, [&](int t) {
      triad(a.get(), b.get(), c.get(), 0.5, elems * t / threads, elems * (t + 1) / threads);
    });
    return bytes;
  });
  if (a[elems / 2] != 2.0) throw std::runtime_error("probe: triad produced a wrong value");
  return rate / 1e9;
}

std::string num(double v) {
  char buf[48];
  std::snprintf(buf, sizeof buf, "%.6g", v);
  return buf;
}

}  // namespace

ProbeResult run_probe(const MachineProbeOptions& o, const std::function<void(const std::string&)>& progress) {
  if (!(o.seconds > 0) || o.seconds > 600) throw std::invalid_argument("--seconds: expected 0 < S <= 600");
  if (o.threads < 0) throw std::invalid_argument("--threads: expected >= 0");
  if (o.gemm_n < 16 || o.gemm_n > 8192) throw std::invalid_argument("gemm_n: expected 16-8192");
  if (o.triad_elems < 1024) throw std::invalid_argument("triad_elems: expected >= 1024");
  ProbeResult r;
  r.created = base::iso_now();
  r.hostname = base::hostname();
  r.cpu_model = base::cpu_model();
  r.threads = o.threads > 0 ? o.threads : allowed_cpus();
  r.gemm_n = o.gemm_n;
  r.triad_elems = o.triad_elems;
  const double part = o.seconds / 4;
  auto say = [&](const std::string& s) {
    if (progress) progress(s);
  };
  const std::string all = std::to_string(r.threads) + " threads";
  r.gemm_gflops_1t = gemm_gflops(o.gemm_n, 1, part);
  say("fp32 GEMM n=" + std::to_string(o.gemm_n) + ", 1 thread:  " + num(r.gemm_gflops_1t) + " GFLOP/s");
  r.gemm_gflops_all = gemm_gflops(o.gemm_n, r.threads, part);
  say("fp32 GEMM n=" + std::to_string(o.gemm_n) + ", " + all + ": " + num(r.gemm_gflops_all) + " GFLOP/s");
  r.triad_gbs_1t = triad_gbs(o.triad_elems, 1, part);
  say("triad " + std::to_string(o.triad_elems * 24 >> 20) + " MiB, 1 thread:  " + num(r.triad_gbs_1t) +
      " GB/s");
  r.triad_gbs_all = triad_gbs(o.triad_elems, r.threads, part);
  say("triad " + std::to_string(o.triad_elems * 24 >> 20) + " MiB, " + all + ": " + num(r.triad_gbs_all) +
      " GB/s");
  return r;
}

namespace {

// The probe file's text fields and measured figures, by key, in the order they are written:
// probe_to_json and read_probe both go through these tables, so each key is named once.
constexpr std::pair<const char*, std::string ProbeResult::*> kProbeTexts[] = {
    {"created", &ProbeResult::created},
    {"hostname", &ProbeResult::hostname},
    {"cpu_model", &ProbeResult::cpu_model}};
constexpr std::pair<const char*, double ProbeResult::*> kProbeFigures[] = {
    {"gemm_gflops_1t", &ProbeResult::gemm_gflops_1t},
    {"gemm_gflops_all", &ProbeResult::gemm_gflops_all},
    {"triad_gbs_1t", &ProbeResult::triad_gbs_1t},
    {"triad_gbs_all", &ProbeResult::triad_gbs_all}};

}  // namespace

std::string probe_to_json(const ProbeResult& r) {
  base::Json j = base::Json::object();
  for (const auto& [key, field] : kProbeTexts) j[key] = r.*field;
  j["threads"] = r.threads;
  j["gemm_n"] = r.gemm_n;
  j["triad_elems"] = r.triad_elems;
  for (const auto& [key, field] : kProbeFigures) j[key] = base::json_number(r.*field, 6);
  j["note"] = "fp32 GEMM is gridrun's own blocked kernel: a lower bound of what MKL/OpenBLAS reach";
  return j.dump(2, ' ', false, base::Json::error_handler_t::replace) + "\n";
}

ProbeResult read_probe(const std::string& path) {
  if (!std::filesystem::is_regular_file(path)) throw std::runtime_error(path + ": cannot open probe file");
  const base::Json j = base::read_json_file(path, base::kinds::kProbeFile);
  if (!j.is_object()) throw std::runtime_error(path + ": not a JSON object");
  auto number = [&](const char* k) {
    auto it = j.find(k);
    if (it == j.end() || !it->is_number())
      throw std::runtime_error(path + ": key '" + k + "' missing or not a number");
    return it->get<double>();
  };
  ProbeResult r;
  for (const auto& [key, field] : kProbeTexts) r.*field = base::get_string(j, key);
  r.threads = static_cast<int>(number("threads"));
  r.gemm_n = static_cast<int>(number("gemm_n"));
  r.triad_elems = static_cast<long long>(number("triad_elems"));
  for (const auto& [key, field] : kProbeFigures) r.*field = number(key);
  return r;
}

std::string default_probe_path() {
  const char* xdg = std::getenv("XDG_CACHE_HOME");
  fs::path base;
  if (xdg && *xdg)
    base = xdg;
  else if (const char* home = std::getenv("HOME"); home && *home)
    base = fs::path(home) / ".cache";
  else
    base = fs::temp_directory_path();
  return (base / "gridrun" / "probe.json").string();
}

}  // namespace gridrun::hw
