// The rendezvous relay (exec/store_relay.hpp): a rank that connects before rank 0's store listens
// is accepted at once, and its bytes reach the store when it listens, both ways, unchanged.
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <string>

#include "gridrun/base/net.hpp"
#include "store_relay.hpp"

namespace gridrun::exec {
namespace {

sockaddr_in loopback(int port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = htons(static_cast<std::uint16_t>(port));
  return a;
}

// A socket whose reads give up after 30 s, so that a broken relay fails the test instead of hanging it.
int bounded_socket() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  timeval tv{30, 0};
  ::setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  return fd;
}

std::string read_some(int fd) {
  char buf[64];
  const ssize_t n = ::recv(fd, buf, sizeof buf, 0);
  return n > 0 ? std::string(buf, static_cast<std::size_t>(n)) : std::string();
}

TEST(StoreRelay, AConnectionBeforeTheStoreListensReachesItWhenItDoes) {
  const int port = base::free_local_port(), store_port = base::free_local_port();
  StoreRelay relay(port, store_port);
  // A rank that is early: the relay accepts it although nothing listens on the store's port yet.
  const int rank = bounded_socket();
  const sockaddr_in to_relay = loopback(port);
  ASSERT_EQ(::connect(rank, reinterpret_cast<const sockaddr*>(&to_relay), sizeof to_relay), 0);
  ASSERT_EQ(::send(rank, "ping", 4, 0), 4);
  // Rank 0's store starts listening only now.
  const int store = bounded_socket();
  const int one = 1;
  ::setsockopt(store, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
  const sockaddr_in at = loopback(store_port);
  ASSERT_EQ(::bind(store, reinterpret_cast<const sockaddr*>(&at), sizeof at), 0);
  ASSERT_EQ(::listen(store, 4), 0);
  const int conn = ::accept(store, nullptr, nullptr);
  ASSERT_GE(conn, 0);
  timeval tv{30, 0};
  ::setsockopt(conn, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
  EXPECT_EQ(read_some(conn), "ping");
  ASSERT_EQ(::send(conn, "pong", 4, 0), 4);
  EXPECT_EQ(read_some(rank), "pong");
  // The store closing the connection closes the rank's.
  ::close(conn);
  EXPECT_EQ(read_some(rank), "");
  ::close(rank);
  ::close(store);
}

TEST(StoreRelay, APortInUseIsRefused) {
  const int port = base::free_local_port();
  StoreRelay first(port, base::free_local_port());
  EXPECT_THROW(StoreRelay(port, base::free_local_port()), std::runtime_error);
}

}  // namespace
}  // namespace gridrun::exec
