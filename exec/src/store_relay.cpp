// See store_relay.hpp.
#include "store_relay.hpp"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>

#include "gridrun/base/text.hpp"

namespace gridrun::exec {

namespace {

constexpr int kPollMs = 100;  // how often a waiting thread looks at the stop flag
constexpr int kRetryUs = 5000;

// The store's side of one connection, or -1 when stopped first.
int connect_store(int port, const std::atomic<bool>& stop) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  while (!stop.load()) {
    const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) return -1;
    if (::connect(fd, reinterpret_cast<const sockaddr*>(&a), sizeof a) == 0) {
      const int one = 1;
      ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
      return fd;
    }
    ::close(fd);
    ::usleep(kRetryUs);  // the store does not listen yet: rank 0's program is still starting
  }
  return -1;
}

// Writes all of `n` bytes; false when the peer is gone.
bool write_all(int fd, const char* p, ssize_t n) {
  while (n > 0) {
    const ssize_t w = ::send(fd, p, static_cast<std::size_t>(n), MSG_NOSIGNAL);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    p += w;
    n -= w;
  }
  return true;
}

}  // namespace

StoreRelay::StoreRelay(int port, int store_port) : store_port_(store_port) {
  listen_fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (listen_fd_ < 0) throw std::runtime_error("relay socket: " + base::errno_text(errno));
  const int one = 1;
  ::setsockopt(listen_fd_, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_ANY);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  if (::bind(listen_fd_, reinterpret_cast<const sockaddr*>(&a), sizeof a) != 0 ||
      ::listen(listen_fd_, 64) != 0) {
    const std::string why = base::errno_text(errno);
    ::close(listen_fd_);
    throw std::runtime_error("cannot listen on port " + std::to_string(port) + ": " + why);
  }
  acceptor_ = std::thread([this] { accept_loop(); });
}

StoreRelay::~StoreRelay() {
  stop_.store(true);
  acceptor_.join();
  ::close(listen_fd_);
  std::lock_guard<std::mutex> lock(mu_);
  for (std::thread& t : conns_) t.join();
}

void StoreRelay::accept_loop() {
  while (!stop_.load()) {
    pollfd p{listen_fd_, POLLIN, 0};
    if (::poll(&p, 1, kPollMs) <= 0) continue;
    const int client = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (client < 0) continue;
    const int one = 1;
    ::setsockopt(client, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    std::lock_guard<std::mutex> lock(mu_);
    conns_.emplace_back([this, client] { pass(client); });
  }
}

void StoreRelay::pass(int client) {
  const int store = connect_store(store_port_, stop_);
  char buf[65536];
  for (bool open = store >= 0; open && !stop_.load();) {
    pollfd p[2] = {{client, POLLIN, 0}, {store, POLLIN, 0}};
    if (::poll(p, 2, kPollMs) <= 0) continue;
    for (int k = 0; k < 2 && open; ++k) {
      if (!(p[k].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      const ssize_t n = ::recv(p[k].fd, buf, sizeof buf, 0);
      if (n < 0 && errno == EINTR) continue;
      open = n > 0 && write_all(p[1 - k].fd, buf, n);
    }
  }
  ::close(client);
  if (store >= 0) ::close(store);
}

}  // namespace gridrun::exec
