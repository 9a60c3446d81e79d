// The warm worker's pipes and messages (worker_channel.hpp).
#include "gridrun/run/worker_channel.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <stdexcept>
#include <string_view>
#include <type_traits>
#include <variant>

#include "gridrun/base/host.hpp"
#include "gridrun/base/json.hpp"
#include "gridrun/base/own_dir.hpp"
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

namespace {

// One field of a message: its key and the member it is. One table per message serves both
// directions, so no field is written under one key and read under another.
template <typename M>
struct Field {
  const char* key;
  std::variant<std::string M::*, bool M::*, double M::*, int M::*> member;
};
const Field<WorkerTask> kTaskFields[] = {{"job", &WorkerTask::job_file},
                                         {"resume", &WorkerTask::resume},
                                         {"launched_at", &WorkerTask::launched_at},
                                         {"heartbeat", &WorkerTask::heartbeat_file},
                                         {"log_out", &WorkerTask::log_out},
                                         {"log_err", &WorkerTask::log_err},
                                         {"ticket", &WorkerTask::ticket}};
const Field<WorkerDone> kDoneFields[] = {
    {"job", &WorkerDone::job_id},          {"code", &WorkerDone::code},
    {"rss_bytes", &WorkerDone::rss_bytes}, {"retiring", &WorkerDone::retiring},
    {"ticket", &WorkerDone::ticket},       {"pid", &WorkerDone::pid}};

base::Json json_of(double v) { return base::json_number(v); }
template <typename T>
base::Json json_of(const T& v) {
  return v;
}

template <typename M, std::size_t N>
std::string encode_fields(const M& m, const Field<M> (&fields)[N]) {
  base::Json j = base::Json::object();
  for (const auto& f : fields) std::visit([&](auto p) { j[f.key] = json_of(m.*p); }, f.member);
  return base::dump_line(j) + "\n";
}

template <typename M, std::size_t N>
M decode_fields(const std::string& line, const Field<M> (&fields)[N], const char* what) {
  const base::Json j = parse_message(line, what);
  M m;
  for (const auto& f : fields)
    std::visit([&](auto p) { m.*p = field<std::decay_t<decltype(m.*p)>>(j, f.key, what); }, f.member);
  return m;
}

}  // namespace

std::string encode(const WorkerTask& t) { return encode_fields(t, kTaskFields); }
std::string encode(const WorkerDone& d) { return encode_fields(d, kDoneFields); }

WorkerTask decode_task(const std::string& line) {
  WorkerTask t = decode_fields(line, kTaskFields, "task");
  if (t.job_file.empty()) throw std::runtime_error("worker task message: 'job' is empty");
  if (!std::isfinite(t.launched_at) || t.launched_at < 0)
    throw std::runtime_error("worker task message: 'launched_at' must be >= 0");
  return t;
}

WorkerDone decode_done(const std::string& line) { return decode_fields(line, kDoneFields, "done"); }

std::string new_worker_ticket() { return base::random_hex(16); }

std::string check_done(const WorkerDone& d, const std::string& job_id, const std::string& ticket,
                       const std::optional<std::vector<int>>& rank_pids) {
  // The ticket first: it is the secret; a job id or a pid anyone can guess.
  if (ticket.empty() || d.ticket != ticket) return "a done message without the ticket of the worker's job";
  if (d.job_id != job_id)
    return "a done message for job '" + base::printable_line(d.job_id) + "', but the worker runs " + job_id;
  if (rank_pids && std::find(rank_pids->begin(), rank_pids->end(), d.pid) == rank_pids->end())
    return "a done message from pid " + std::to_string(d.pid) + ", not one of the worker's ranks";
  return "";
}

std::string worker_task_pipe(const std::string& dir, int rank) {
  return (std::filesystem::path(dir) / ("task." + std::to_string(rank))).string();
}
std::string worker_done_pipe(const std::string& dir) {
  return (std::filesystem::path(dir) / "done").string();
}

bool is_worker_pipe_name(const std::string& name) {
  if (name == "done") return true;
  constexpr std::string_view kTask = "task.";
  return name.size() > kTask.size() && name.compare(0, kTask.size(), kTask) == 0 &&
         name.find_first_not_of("0123456789", kTask.size()) == std::string::npos;
}

PipeEnd& PipeEnd::operator=(PipeEnd&& o) noexcept {
  if (this != &o) {
    close();
    fd_ = o.fd_;
    max_line_ = o.max_line_;
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

void PipeEnd::too_long() {
  // What is buffered is dropped: a sender that broke the format once cannot be resynchronised.
  buf_.clear();
  buf_.shrink_to_fit();
  throw std::runtime_error("a message longer than " + std::to_string(max_line_) +
                           " bytes without a line end");
}

std::optional<std::string> PipeEnd::read_line(double timeout_s, bool* eof) {
  if (eof) *eof = false;
  const auto deadline =
      std::chrono::steady_clock::now() + std::chrono::duration<double>(std::max(0.0, timeout_s));
  while (fd_ >= 0) {
    if (auto nl = buf_.find('\n'); nl != std::string::npos) {
      std::string line = buf_.substr(0, nl);
      buf_.erase(0, nl + 1);
      if (line.size() > max_line_) too_long();
      return line;
    }
    if (buf_.size() > max_line_) too_long();
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
  // A folder of gridrun's own, never a link (issue 57: a `workers` link had the pipes made, and
  // later removed, in another folder); the launcher checks workers/ itself the same way.
  base::make_own_dir(dir);
  auto make = [](const std::string& path, std::size_t max_line) {
    ::unlink(path.c_str());  // a leftover of a worker this folder had before
    if (::mkfifo(path.c_str(), 0600) != 0) fail(path, "create the pipe");
    const int fd = ::open(path.c_str(), O_RDWR | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) fail(path, "open");
    return PipeEnd(fd, max_line);
  };
  WorkerPipes p;
  for (int r = 0; r < ranks; ++r) p.tasks.push_back(make(worker_task_pipe(dir, r), kMaxTaskLineBytes));
  p.done = make(worker_done_pipe(dir), kMaxDoneLineBytes);
  return p;
}

WorkerInbox open_worker_inbox(const std::string& dir, int rank) {
  WorkerInbox in;
  // Non-blocking opens: with the launcher gone already, reading gives end-of-file and opening the
  // done pipe fails (ENXIO) at once, instead of an open that waits for ever.
  const std::string task = worker_task_pipe(dir, rank);
  const int tfd = ::open(task.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC);
  if (tfd < 0) fail(task, "open");
  in.task = PipeEnd(tfd, kMaxTaskLineBytes);
  if (rank == 0) {
    const std::string done = worker_done_pipe(dir);
    const int dfd = ::open(done.c_str(), O_WRONLY | O_NONBLOCK | O_CLOEXEC);
    if (dfd < 0) fail(done, "open");
    // Blocking writes from here on: a message is small and the launcher reads it each tick.
    ::fcntl(dfd, F_SETFL, ::fcntl(dfd, F_GETFL) & ~O_NONBLOCK);
    in.done = PipeEnd(dfd, kMaxDoneLineBytes);
  }
  return in;
}

}  // namespace gridrun::run
