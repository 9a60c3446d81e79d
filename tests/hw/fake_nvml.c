/* Test double of libnvidia-ml.so.1 with two fixed devices, used beside the real-NVML test
 * (Sampler.RealNvmlWhenPresent) to exercise the dlopen binding and CUDA_VISIBLE_DEVICES
 * resolution on machines without a GPU. Values are fixed so tests can assert them, except the GPU
 * conditions, which a test sets through the environment: FAKE_NVML_PIDS (the compute processes of
 * every device, comma-separated, the k-th using k+1 MiB; unset: none), FAKE_NVML_REASONS (the clocks event reasons, a
 * number; unset: 0x1, idle) and FAKE_NVML_SM_MHZ (the SM clock; unset: 1410, of a 1980 maximum). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct nvmlDevice_st* nvmlDevice_t;
typedef struct { unsigned gpu, memory; } nvmlUtilization_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;

static int devs[2];
#define DEV(d) ((int*)(d) - devs)

int nvmlInit_v2(void) { return 0; }
int nvmlShutdown(void) { return 0; }
int nvmlDeviceGetCount_v2(unsigned* n) { *n = 2; return 0; }
int nvmlDeviceGetHandleByIndex_v2(unsigned i, nvmlDevice_t* d) {
  if (i >= 2) return 2;
  *d = (nvmlDevice_t)&devs[i];
  return 0;
}
int nvmlDeviceGetUUID(nvmlDevice_t d, char* buf, unsigned n) {
  snprintf(buf, n, DEV(d) == 0 ? "GPU-aaaa1111-0000-0000-0000-000000000000" : "GPU-bbbb2222-0000-0000-0000-000000000000");
  return 0;
}
int nvmlDeviceGetName(nvmlDevice_t d, char* buf, unsigned n) { snprintf(buf, n, "Fake GPU %d", (int)DEV(d)); return 0; }
int nvmlDeviceGetUtilizationRates(nvmlDevice_t d, nvmlUtilization_t* u) { u->gpu = 40 + (unsigned)DEV(d); u->memory = 0; return 0; }
int nvmlDeviceGetMemoryInfo(nvmlDevice_t d, nvmlMemory_t* m) { m->total = 8ULL << 30; m->used = (1ULL << 30) * (DEV(d) + 1); m->free = m->total - m->used; return 0; }
int nvmlDeviceGetPowerUsage(nvmlDevice_t d, unsigned* mw) { (void)d; *mw = 100000; return 0; }
int nvmlDeviceGetTotalEnergyConsumption(nvmlDevice_t d, unsigned long long* mj) { (void)d; *mj = 5000000; return 0; }
int nvmlDeviceGetTemperature(nvmlDevice_t d, int sensor, unsigned* t) { (void)d; (void)sensor; *t = 55; return 0; }
int nvmlDeviceGetClockInfo(nvmlDevice_t d, int type, unsigned* mhz) {
  const char* v = getenv("FAKE_NVML_SM_MHZ");
  (void)d;
  return type == 1 ? (*mhz = v ? (unsigned)strtoul(v, NULL, 10) : 1410, 0) : 3;
}
int nvmlDeviceGetMaxClockInfo(nvmlDevice_t d, int type, unsigned* mhz) { (void)d; return type == 1 ? (*mhz = 1980, 0) : 3; }
int nvmlDeviceGetCurrentClocksThrottleReasons(nvmlDevice_t d, unsigned long long* reasons) {
  const char* v = getenv("FAKE_NVML_REASONS");
  (void)d;
  *reasons = v ? strtoull(v, NULL, 0) : 0x1;
  return 0;
}

typedef struct { unsigned pid; unsigned long long usedGpuMemory; unsigned gpuInstanceId, computeInstanceId; } nvmlProcessInfo_t;

/* NVML's contract: too small a buffer gives NVML_ERROR_INSUFFICIENT_SIZE (7) and the count needed. */
int nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t d, unsigned* count, nvmlProcessInfo_t* infos) {
  const char* v = getenv("FAKE_NVML_PIDS");
  unsigned n = 0, pids[64];
  (void)d;
  while (v && *v && n < 64) {
    char* end = NULL;
    pids[n++] = (unsigned)strtoul(v, &end, 10);
    v = *end == ',' ? end + 1 : end;
  }
  if (*count < n) { *count = n; return 7; }
  for (unsigned k = 0; k < n; ++k) { infos[k].pid = pids[k]; infos[k].usedGpuMemory = (k + 1ULL) << 20; }
  *count = n;
  return 0;
}
