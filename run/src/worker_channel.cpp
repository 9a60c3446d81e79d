// The warm worker's pipes and messages (worker_channel.hpp).
#include "gridrun/run/worker_channel.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include "gridrun/base/json.hpp"
#include "gridrun/base/text.hpp"

namespace gridrun::run {

namespace {

base::Json parse_message(const std::string& line, const char* what) {
  base::Json j = base::parse_json(line, std::string("worker ") + what + " message");
  if (!j.is_object()) throw std::runtime_error(std::string("worker ") + what + " message: not a JSON object");
  return j;
}

template <typename T>
T field(const base::Json& j, const char* key, const char* what) {
  auto it = j.find(key);
  if (it == j.end()) throw std::runtime_error(std::string("worker ") + what + " message: no '" + key + "'");
  try {
    return it->get<T>();
  } catch (const std::exception&) {
    throw std::runtime_error(std::string("worker ") + what + " message: '" + key + "' has the wrong type");
  }
}

[[noreturn]] void fail(const std::string& path, const char* doing) {
  throw std::runtime_error(path + ": cannot " + doing + ": " + base::errno_text(errno));
}

}  // namespace

std::string encode(const WorkerTask& t) {
  base::Json j{{"job", t.job_file},
               {"resume", t.resume},
               {"launched_at", base::json_number(t.launched_at)},
               {"heartbeat", t.heartbeat_file},
               {"log_out", t.log_out},
               {"log_err", t.log_err}};
  return base::dump_line(j) + "\n";
}

std::string encode(const WorkerDone& d) {
  base::Json j{{"job", d.job_id},
               {"code", d.code},
               {"rss_bytes", base::json_number(d.rss_bytes)},
               {"retiring", d.retiring}};
  return base::dump_line(j) + "\n";
}

WorkerTask decode_task(const std::string& line) {
  const base::Json j = parse_message(line, "task");
  WorkerTask t;
  t.job_file = field<std::string>(j, "job", "task");
  t.resume = field<bool>(j, "resume", "task");
  t.launched_at = field<double>(j, "launched_at", "task");
  t.heartbeat_file = field<std::string>(j, "heartbeat", "task");
  t.log_out = field<std::string>(j, "log_out", "task");
  t.log_err = field<std::string>(j, "log_err", "task");
  if (t.job_file.empty()) throw std::runtime_error("worker task message: 'job' is empty");
  if (!std::isfinite(t.launched_at) || t.launched_at < 0)
    throw std::runtime_error("worker task message: 'launched_at' must be >= 0");
  return t;
}

WorkerDone decode_done(const std::string& line) {
  const base::Json j = parse_message(line, "done");
  WorkerDone d;
  d.job_id = field<std::string>(j, "job", "done");
  d.code = field<int>(j, "code", "done");
  d.rss_bytes = field<double>(j, "rss_bytes", "done");
  d.retiring = field<bool>(j, "retiring", "done");
  return d;
}

std::string worker_task_pipe(const std::string& dir, int rank) {
  return (std::filesystem::path(dir) / ("task." + std::to_string(rank))).string();
}
std::string worker_done_pipe(const std::string& dir) {
  return (std::filesystem::path(dir) / "done").string();
}

PipeEnd& PipeEnd::operator=(PipeEnd&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = o.fd_;
    buf_ = std::move(o.buf_);
    o.fd_ = -1;
  }
  return *this;
}

void PipeEnd::close() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
}

bool PipeEnd::write_line(const std::string& line) {
  if (fd_ < 0) return false;
  std::size_t off = 0;
  while (off < line.size()) {
    const ssize_t n = ::write(fd_, line.data() + off, line.size() - off);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;  // EPIPE: the reader is gone (SIGPIPE is ignored by the writers)
    off += static_cast<std::size_t>(n);
  }
  return true;
}

std::optional<std::string> PipeEnd::read_line(double timeout_s, bool* eof) {
  if (eof) *eof = false;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(std::max(0.0, timeout_s));
  while (fd_ >= 0) {
    if (auto nl = buf_.find('\n'); nl != std::string::npos) {
      std::string line = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      return line;
    }
    int wait_ms = -1;
    if (timeout_s >= 0) {
      const auto left =
          std::chrono::duration_cast<std::chrono::milliseconds>(deadline - std::chrono::steady_clock::now());
      wait_ms = static_cast<int>(std::max<long long>(0, left.count()));
    }
    pollfd p{fd_, POLLIN, 0};
    const int r = ::poll(&p, 1, wait_ms);
    if (r < 0 && errno == EINTR) return std::nullopt;  // a signal: the caller looks at its flags
    if (r <= 0) return std::nullopt;                   // timed out
    char chunk[4096];
    const ssize_t n = ::read(fd_, chunk, sizeof chunk);
    if (n > 0) {
      buf_.append(chunk, static_cast<std::size_t>(n));
      continue;
    }
    if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
      if (timeout_s == 0) return std::nullopt;
      continue;
    }
    if (eof) *eof = true;  // 0: every writer closed its end
    return std::nullopt;
  }
  if (eof) *eof = true;
  return std::nullopt;
}

WorkerPipes make_worker_pipes(const std::string& dir, int ranks) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error(dir + ": cannot create: " + ec.message());
  auto make = [](const std::string& path) {
    ::unlink(path.c_str());  // a leftover of a worker this folder had before
    if (::mkfifo(path.c_str(), 0600) != 0) fail(path, "create the pipe");
    const int fd = ::open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) fail(path, "open");
    return PipeEnd(fd);
  };
  WorkerPipes p;
  for (int r = 0; r < ranks; ++r) p.tasks.push_back(make(worker_task_pipe(dir, r)));
  p.done = make(worker_done_pipe(dir));
  return p;
}

WorkerInbox open_worker_inbox(const std::string& dir, int rank) {
  WorkerInbox in;
  // Non-blocking opens: with the launcher gone already, reading gives end-of-file and opening the
  // done pipe fails (ENXIO) at once, instead of an open that waits for ever.
  const std::string task = worker_task_pipe(dir, rank);
  const int tfd = ::open(task.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (tfd < 0) fail(task, "open");
  in.task = PipeEnd(tfd);
  if (rank == 0) {
    const std::string done = worker_done_pipe(dir);
    const int dfd = ::open(done.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (dfd < 0) fail(done, "open");
    // Blocking writes from here on: a message is small and the launcher reads it each tick.
    ::fcntl(dfd, F_SETFL, ::fcntl(dfd, F_GETFL) & ~O_NONBLOCK);
    in.done = PipeEnd(dfd);
  }
  return in;
}

}  // namespace gridrun::run
