// The stop flag behind StopSignal. A signal handler can only communicate through an object with
// static storage, so this is the one deliberate piece of process-wide mutable state in the runner;
// it is a lock-free atomic written only by the handler and read by the training loop.
#include "gridrun/runner/signals.hpp"

#include <atomic>
#include <csignal>

namespace gridrun::runner {

namespace {
std::atomic<int>& flag() {
  static std::atomic<int> f{0};
  return f;
}
extern "C" void on_stop_signal(int sig) { flag().store(sig, std::memory_order_relaxed); }
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

}  // namespace gridrun::runner
