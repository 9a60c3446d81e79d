// See net.hpp.
#include "gridrun/base/net.hpp"

#include <arpa/inet.h>
#include <ifaddrs.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <stdexcept>
#include <string>

#include "gridrun/base/text.hpp"

namespace gridrun::base {

int free_local_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) throw std::runtime_error(std::string("socket: ") + errno_text(errno));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  socklen_t len = sizeof a;
  const bool ok = ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
                  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0;
  const int err = errno;
  ::close(fd);
  if (!ok) throw std::runtime_error(std::string("cannot find a free port on 127.0.0.1: ") + errno_text(err));
  return ntohs(a.sin_port);
}

std::string interface_ipv4(const std::string& name) {
  ifaddrs* all = nullptr;
  if (::getifaddrs(&all) != 0) return "";
  std::string out;
  for (const ifaddrs* a = all; a && out.empty(); a = a->ifa_next) {
    if (!a->ifa_addr || a->ifa_addr->sa_family != AF_INET || name != a->ifa_name) continue;
    char text[INET_ADDRSTRLEN] = {};
    const auto* in = reinterpret_cast<const sockaddr_in*>(a->ifa_addr);
    if (::inet_ntop(AF_INET, &in->sin_addr, text, sizeof text)) out = text;
  }
  ::freeifaddrs(all);
  return out;
}

}  // namespace gridrun::base
