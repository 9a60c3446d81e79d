// Facts about this host and its processes, read from the kernel (/proc, gethostname).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

namespace gridrun::base {

// gethostname, or `fallback` (the rankfile needs a name mpirun resolves: it passes "localhost").
std::string hostname(const std::string& fallback = "unknown");
std::string cpu_model();  // "model name" of /proc/cpuinfo, or "unknown"
// This process's executable (/proc/self/exe), "" when the kernel does not say: to start a sibling
// binary or another copy of itself.
std::string self_exe();
// When this process was created, in seconds since the epoch (/proc/self/stat's start time over
// /proc/stat's btime; about 10 ms resolution), NaN when the kernel does not say. What the runner
// subtracts its launcher's start from, to tell launch from library load.
double process_start_unix();

// Direct children of `pid` (/proc/PID/task/PID/children, or a scan of /proc/*/stat on kernels
// without that file); empty when it is gone.
std::vector<int> children_of(int pid);
// The command name (/proc/PID/comm) of a process, "" when it is gone.
std::string comm_of(int pid);
// The parent of a process (/proc/PID/stat field 4), -1 when it is gone.
int parent_of(int pid);
// When a process started, in clock ticks since boot (/proc/PID/stat field 22); nullopt when it is
// gone. With the PID it names one process for the whole boot: a PID reused by a later process
// comes with a later start.
std::optional<unsigned long long> start_ticks(int pid);

// A process pinned by a pidfd (pidfd_open): for as long as it is held it names that one process, so
// a signal sent through it reaches that process or none, never a later one given the same PID.
// What gridrun signals beyond its own children (the leftovers of an earlier `gridrun run`, a run's
// lock holder for `gridrun cancel`) is signalled through one of these, after it was checked.
class PinnedProcess {
 public:
  // nullopt when `pid` is gone (or the kernel has no pidfds).
  static std::optional<PinnedProcess> open(int pid);
  PinnedProcess(PinnedProcess&& o) noexcept : pid_(o.pid_), fd_(o.fd_) { o.fd_ = -1; }
  PinnedProcess& operator=(PinnedProcess&& o) noexcept;
  PinnedProcess(const PinnedProcess&) = delete;
  PinnedProcess& operator=(const PinnedProcess&) = delete;
  ~PinnedProcess();

  int pid() const { return pid_; }
  bool exited() const;                     // ended (a zombie not yet reaped has ended)
  bool wait_exit(double timeout_s) const;  // true when it ended within `timeout_s` (poll, no loop)
  bool signal(int sig) const;              // false when it had ended (nothing was signalled)

 private:
  PinnedProcess(int pid, int fd) : pid_(pid), fd_(fd) {}
  int pid_ = -1;
  int fd_ = -1;
};

// Processes of this user (real and effective uid equal to our effective uid), not this one, whose
// environment holds every one of `entries` ("NAME=value", whole entries) as it was given at exec
// (/proc/PID/environ), pinned. Each is pinned before its environment is read and kept only when it
// is still alive after, so what was read was its own, not a reused PID's. One /proc scan. Why the
// environment and not the arguments: any process may name a file in its arguments (`tail -f` of a
// job file), but only one started with it has the secret value gridrun put in the environment.
std::vector<PinnedProcess> own_processes_with_env(const std::vector<std::string>& entries);

// Whether `pid` holds an exclusive flock on `path` through one of its open files: an fd of it
// that refers to that file (same device and inode) with a WRITE FLOCK in its /proc/PID/fdinfo.
// false when that cannot be read (another user's process, unless we are root).
bool holds_flock(int pid, const std::string& path);

// The whole node's CPU clock ticks from /proc/stat's first line: `busy` (user, nice, system, irq,
// softirq, steal) and `total` (those plus idle and iowait), summed over all cores; false when the
// kernel does not say. Allocation-free: the utilization sampler reads it 10 times a second.
bool node_cpu_ticks(double& busy, double& total);

// CPU seconds of the node and of this process's own tree, at one moment. The difference of two
// snapshots tells how much CPU went to processes that are not this one or its descendants: the
// reaped ones through getrusage, the live ones (a warm worker, a rank not yet waited for) through
// /proc/PID/stat, walked from this process. What a compare-by phase and each calibration
// measurement record as the load beside them.
struct CpuSnapshot {
  double node_busy_s = 0;  // busy ticks of all cores / CLK_TCK
  double own_s = 0;        // user + system time of this process and its descendants, live or reaped
  int cores = 0;           // online cores
  bool ok = false;         // false when /proc/stat or getrusage could not be read
};
CpuSnapshot cpu_snapshot();
// The share (0-1) of the node's CPU capacity over `wall_s` seconds that went to processes outside
// this process's tree between two snapshots; NaN when either is not ok or wall_s <= 0. Clamped to
// [0, 1] (tick rounding can make a quiet node's difference slightly negative).
double outside_cpu_share(const CpuSnapshot& from, const CpuSnapshot& to, double wall_s);

// `bytes` bytes from the kernel's random source (getrandom), as 2 x `bytes` lowercase hex digits:
// the secrets a run hands its own processes (the launch token, a warm worker's job ticket).
// Throws std::runtime_error when none can be had.
std::string random_hex(std::size_t bytes);

}  // namespace gridrun::base
