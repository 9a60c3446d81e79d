// See fs.hpp. POSIX calls rather than iostreams: we need the errno of each step for the message,
// and fsync, which iostreams cannot do.
#include "gridrun/base/fs.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <vector>

#include "gridrun/base/text.hpp"

namespace gridrun::base {

std::string absolute_path(const std::string& path) {
  if (path.empty()) return path;
  std::error_code ec;
  const std::filesystem::path abs = std::filesystem::absolute(path, ec);
  return ec ? path : abs.string();
}

namespace {

std::string dir_of(const std::string& path) {
  const auto slash = path.rfind('/');
  if (slash == std::string::npos) return ".";
  return slash == 0 ? "/" : path.substr(0, slash);
}

// Owns one descriptor, so every early exit (throw) closes it.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }
  int release() {
    const int f = fd_;
    fd_ = -1;
    return f;
  }

 private:
  int fd_;
};

bool read_all(const std::string& path, std::string& out, int& err) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    err = errno;
    return false;
  }
  struct stat st {};
  if (::fstat(fd.get(), &st) == 0 && st.st_size > 0) out.reserve(static_cast<std::size_t>(st.st_size));
  char buf[65536];
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<std::size_t>(n));
    } else if (n == 0) {
      return true;
    } else if (errno != EINTR) {
      err = errno;
      return false;
    }
  }
}

}  // namespace

void read_file_blocks(const std::string& path, std::size_t block,
                      const std::function<void(const unsigned char* data, std::size_t size)>& fn) {
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC));
  if (fd.get() < 0) {
    const int err = errno;  // before building the message, which may allocate
    throw std::runtime_error(path + ": cannot read: " + errno_text(err));
  }
  std::vector<unsigned char> buf(block > 0 ? block : 1);
  for (;;) {
    const ssize_t n = ::read(fd.get(), buf.data(), buf.size());
    if (n > 0) {
      fn(buf.data(), static_cast<std::size_t>(n));
    } else if (n == 0) {
      return;
    } else if (const int err = errno; err != EINTR) {
      throw std::runtime_error(path + ": cannot read: " + errno_text(err));
    }
  }
}

std::string read_file(const std::string& path) {
  std::string out;
  int err = 0;
  if (!read_all(path, out, err)) throw std::runtime_error(path + ": cannot read: " + errno_text(err));
  return out;
}

std::optional<std::string> try_read_file(const std::string& path) {
  std::string out;
  int err = 0;
  if (!read_all(path, out, err)) return std::nullopt;
  return out;
}

void fsync_dir(const std::string& dir) {
  Fd fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
  if (fd.get() >= 0) ::fsync(fd.get());
}

namespace {
void write_then_rename(const std::string& path, std::string_view data, unsigned mode, bool durable) {
  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  auto fail = [&](const char* step, int err) {
    ::unlink(tmp.c_str());
    throw std::runtime_error(path + ": cannot write (" + step + "): " + errno_text(err));
  };
  {
    Fd fd(::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, static_cast<mode_t>(mode)));
    if (fd.get() < 0) fail("create", errno);
    // A temporary that a crashed process of the same PID left keeps its permissions through
    // O_TRUNC: a secret's are set here, before its first byte.
    if (mode != 0644 && ::fchmod(fd.get(), static_cast<mode_t>(mode)) != 0) fail("chmod", errno);
    std::size_t done = 0;
    while (done < data.size()) {
      const ssize_t n = ::write(fd.get(), data.data() + done, data.size() - done);
      if (n < 0) {
        if (errno == EINTR) continue;
        fail("write", errno);
      }
      done += static_cast<std::size_t>(n);
    }
    if (durable && ::fsync(fd.get()) != 0) fail("fsync", errno);
    if (::close(fd.release()) != 0) fail("close", errno);
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) fail("rename", errno);
  if (durable) fsync_dir(dir_of(path));
}
}  // namespace

void write_file_atomic(const std::string& path, std::string_view data, unsigned mode) {
  write_then_rename(path, data, mode, true);
}

void replace_file(const std::string& path, std::string_view data) {
  write_then_rename(path, data, 0644, false);
}

void rename_durable(const std::string& from, const std::string& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0)
    throw std::runtime_error("cannot rename " + from + " to " + to + ": " + errno_text(errno));
  fsync_dir(dir_of(to));
}

std::string quarantine(const std::string& path) {
  std::string to = path + ".damaged";
  struct stat st {};
  for (int n = 2; ::stat(to.c_str(), &st) == 0 && n < 1000; ++n) to = path + ".damaged." + std::to_string(n);
  if (std::rename(path.c_str(), to.c_str()) != 0) return "";
  fsync_dir(dir_of(to));
  return to;
}

}  // namespace gridrun::base
