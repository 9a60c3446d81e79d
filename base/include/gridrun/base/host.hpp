// Facts about this host and its processes, read from the kernel (/proc, gethostname).
#pragma once

#include <string>
#include <unordered_set>
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
// Processes (any owner, not this one) with one of `args` as a command-line argument (or as the
// value of an `--opt=VALUE` argument). One /proc scan whatever the number of args: a run of
// 10,000 jobs asks for all its job files at once.
std::vector<int> processes_with_arg(const std::unordered_set<std::string>& args);

}  // namespace gridrun::base
