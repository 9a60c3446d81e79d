// The rendezvous relay of a multi-rank command job: rank 0's gridrun-exec listens on the job's
// MASTER_PORT and hands each connection to its program's TCPStore on a private port.
//
// Why: torch.distributed's env:// rendezvous has rank 0's program host a TCPStore on MASTER_PORT,
// and a rank that connects before it listens (the ranks start together; rank 0 still imports
// torch) is refused and retries after a fixed second (c10d's client). So a 2-rank job's start
// took 0 or 1 s more by chance: measured on this machine, init_process_group 0.02 s or 1.02 s,
// half and half, which made the makespan of a phase of such jobs vary by a third and their
// prediction miss it (issue 56: 18.9 % against the 15 % goal). torchrun avoids it by hosting the
// store in its agent, before the workers start; gridrun-exec cannot host c10d's store, but it can
// accept the connection at once and pass it on as soon as the store listens (tried every 5 ms).
// The bytes are passed unchanged; gloo and NCCL connect the ranks directly (through the addresses
// the store hands out), so only the store's few messages go through here.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace gridrun::exec {

class StoreRelay {
 public:
  // Listens on `port` (every interface: the other hosts of a Slurm job connect there) and passes
  // each connection to 127.0.0.1:`store_port`. Throws std::runtime_error when `port` cannot be
  // bound (the caller then lets the program listen on `port` itself, as before).
  StoreRelay(int port, int store_port);
  ~StoreRelay();  // stops accepting, closes every connection, joins its threads
  StoreRelay(const StoreRelay&) = delete;
  StoreRelay& operator=(const StoreRelay&) = delete;

 private:
  void accept_loop();
  void pass(int client);
  int listen_fd_ = -1;
  int store_port_ = 0;
  std::atomic<bool> stop_{false};
  std::mutex mu_;
  std::vector<std::thread> conns_;
  std::thread acceptor_;
};

}  // namespace gridrun::exec
