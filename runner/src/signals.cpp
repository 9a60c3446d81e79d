// The stop flag behind StopSignal. A signal handler can only communicate through an object with
// static storage, so this is the one deliberate piece of process-wide mutable state in the runner;
// it is a lock-free atomic written only by the handler (and the owner watch) and read by the
// training loop.
#include "signals.hpp"

#include <poll.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <thread>

#include "gridrun/base/host.hpp"
#include "gridrun/runner/errors.hpp"

namespace gridrun::runner {

namespace {
std::atomic<int>& flag() {
  static std::atomic<int> f{0};
  return f;
}
extern "C" void on_stop_signal(int sig) { flag().store(sig, std::memory_order_relaxed); }

// Blocks until `pid` has exited.
void wait_gone(long pid) {
  const int fd = static_cast<int>(::syscall(SYS_pidfd_open, static_cast<pid_t>(pid), 0));
  if (fd >= 0) {
    pollfd p{fd, POLLIN, 0};
    while (::poll(&p, 1, -1) < 0 && errno == EINTR) {
    }
    ::close(fd);
    return;
  }
  if (errno == ESRCH) return;
  // No pidfd (kernel < 5.3, or a seccomp filter): the owner cannot notify us, so ask once a second.
  while (::kill(static_cast<pid_t>(pid), 0) == 0 || errno == EPERM)
    std::this_thread::sleep_for(std::chrono::seconds(1));
}
}  // namespace

void StopSignal::install() {
  flag();  // construct before any signal can arrive
  struct sigaction sa {};
  sa.sa_handler = on_stop_signal;
  sigemptyset(&sa.sa_mask);
  sa.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &sa, nullptr);
  sigaction(SIGUSR1, &sa, nullptr);
}

int StopSignal::received() { return flag().load(std::memory_order_relaxed); }
void StopSignal::clear() { flag().store(0); }

void watch_owner(long pid, const std::string& owner_host, double grace_s) {
  if (pid <= 0) return;
  if (!owner_host.empty() && owner_host != base::hostname()) return;
  flag();
  std::thread([pid, grace_s] {
    wait_gone(pid);
    std::fprintf(stderr, "gridrun-train: owner PID %ld is gone; checkpointing and stopping\n", pid);
    flag().store(SIGHUP, std::memory_order_relaxed);
    std::this_thread::sleep_for(std::chrono::duration<double>(grace_s));
    std::fprintf(stderr,
                 "gridrun-train: owner PID %ld is gone and the job did not stop within "
                 "%.0f s; exiting without a checkpoint\n",
                 pid, grace_s);
    std::fflush(stderr);
    ::_exit(kExitFailure);
  }).detach();
}

}  // namespace gridrun::runner
