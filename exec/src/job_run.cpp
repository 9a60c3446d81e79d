// See job_run.hpp. One loop: poll the program's stdout and stderr, pass every line through, turn
// rank 0's records into rows, and watch for a stop (a signal to us, the owner gone, a non-finite
// loss) and for the program's end.
#include "job_run.hpp"

#include <poll.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <iostream>
#include <limits>
#include <memory>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <tuple>
#include <vector>

#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/host.hpp"
#include "gridrun/base/json.hpp"
#include "gridrun/base/net.hpp"
#include "gridrun/base/spawn.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/hw/util_sampler.hpp"
#include "gridrun/jobs/command.hpp"
#include "gridrun/jobs/footprint.hpp"
#include "gridrun/jobs/job.hpp"
#include "gridrun/results/writer.hpp"
#include "gridrun/run/exit_codes.hpp"
#include "gridrun/run/progress.hpp"
#include "gridrun/run/run_dir.hpp"
#include "protocol.hpp"
#include "rank_report.hpp"
#include "store_relay.hpp"

namespace gridrun::exec {

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// The signal that asked us to stop (0: none). A signal handler can only reach static storage; this
// one is written by the handler alone and read by the loop (lock-free), as runner/signals.hpp does.
std::atomic<int>& stop_signal() {
  static std::atomic<int> sig{0};
  return sig;
}

extern "C" void on_stop(int sig) { stop_signal().store(sig); }

void install_stop_handlers() {
  struct sigaction sa {};
  sa.sa_handler = on_stop;
  sigemptyset(&sa.sa_mask);
  for (int s : {SIGTERM, SIGUSR1, SIGINT, SIGHUP}) ::sigaction(s, &sa, nullptr);
}

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  char* end = nullptr;
  const long x = std::strtol(v, &end, 10);
  return (end && *end == '\0' && x >= 0 && x < (1L << 30)) ? static_cast<int>(x) : fallback;
}

bool alive(long pid) { return pid <= 0 || ::kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH; }

// The folder of gridrun_job.py: share/gridrun/python beside this binary's bin/ (the build tree
// and an install alike); "" when it is not there.
std::string helper_dir() {
  std::error_code ec;
  const fs::path self = fs::read_symlink("/proc/self/exe", ec);
  if (ec) return "";
  const fs::path d = self.parent_path().parent_path() / "share" / "gridrun" / "python";
  return fs::is_regular_file(d / "gridrun_job.py", ec) ? d.string() : "";
}

// The last lines of the program's stderr, for a failed job's reason.
class Tail {
 public:
  void add(std::string line) {
    if (line.size() > 300) line = line.substr(0, 300) + "...";
    if (line.find_first_not_of(" \t\r") == std::string::npos) return;
    lines_.push_back(std::move(line));
    if (lines_.size() > 4) lines_.pop_front();
  }
  std::string text() const {
    std::string s;
    for (const auto& l : lines_) s += (s.empty() ? "" : " | ") + l;
    return s;
  }

 private:
  std::deque<std::string> lines_;
};

// Splits a stream into lines; an over-long line is passed on in pieces and never parsed.
class LineReader {
 public:
  // Reads what `fd` has; calls on_line(text, whole) per line. False at end-of-file or error.
  template <typename Fn>
  bool read(int fd, Fn on_line) {
    char buf[65536];
    const ssize_t n = ::read(fd, buf, sizeof buf);
    if (n < 0) return errno == EINTR || errno == EAGAIN;
    if (n == 0) {
      if (!pending_.empty()) on_line(pending_, !overlong_);
      pending_.clear();
      return false;
    }
    for (ssize_t i = 0; i < n; ++i) {
      if (buf[i] == '\n') {
        on_line(pending_, !overlong_);
        pending_.clear();
        overlong_ = false;
      } else {
        pending_.push_back(buf[i]);
        if (pending_.size() > kMaxRecordLine) {
          on_line(pending_, false);
          pending_.clear();
          overlong_ = true;
        }
      }
    }
    return true;
  }
  bool overlong() const { return overlong_; }

 private:
  std::string pending_;
  bool overlong_ = false;
};

// The step seconds of a program's step lines: the time between two of them (the first one's start
// is not seen: the program's start-up comes before it, so it has none).
class StepClock {
 public:
  double lap() {
    const auto now = Clock::now();
    const double s = seen_ ? std::chrono::duration<double>(now - last_).count() : kNaN;
    last_ = now;
    seen_ = true;
    return s;
  }

 private:
  Clock::time_point last_{};
  bool seen_ = false;
};

// A rank > 0's report to rank 0 (rank_report.hpp): its step seconds and its program's CPU and RSS.
class PeerReporter {
 public:
  PeerReporter(const ExecOptions& o, const std::string& dir, const std::string& key, int rank, int child_pid)
      : out_(dir, key, rank) {
    hw::UtilReaderOptions ro;
    ro.pids = {static_cast<pid_t>(child_pid)};
    ro.gpus = false;  // a GPU's figures are its device's: rank 0 samples the job's GPUs
    hw::SamplerOptions so;
    so.hz = o.util_hz;
    sampler_ = std::make_unique<hw::UtilSampler>(std::make_unique<hw::UtilReader>(ro), so,
                                                 [this](const hw::UtilSample& s) {
                                                   if (!s.rank_cpu_pct.empty() && !s.rank_rss_bytes.empty())
                                                     out_.util(s.rank_cpu_pct[0], s.rank_rss_bytes[0]);
                                                 });
  }
  void step(const StepRecord& r) {
    const double s = clock_.lap();
    ++steps_;
    out_.step(r.step.value_or(steps_), s);
  }

 private:
  RankReportWriter out_;
  StepClock clock_;
  std::int64_t steps_ = 0;
  std::unique_ptr<hw::UtilSampler> sampler_;  // last: stopped before out_ goes
};

// Rank 0's record of the job: the results file, the heartbeat and the summary.
class Recorder {
 public:
  // `peers`: the other ranks' reports (a job of more than one rank), else null.
  Recorder(const ExecOptions& o, const jobs::Job& job, int world, int child_pid,
           std::unique_ptr<RankReportReader> peers)
      : o_(o), job_(job), peers_(std::move(peers)), t0_(Clock::now()) {
    const jobs::Footprint fp = jobs::footprint(job.params);
    hw::UtilReaderOptions ro;
    ro.pids = {static_cast<pid_t>(child_pid)};
    ro.gpus = fp.gpus > 0;
    auto reader = std::make_unique<hw::UtilReader>(ro);
    results::JobFileInfo info;
    info.id = job.id;
    info.run = job.run;
    info.params = job.params;
    info.ranks = world;
    info.gpus = reader->gpu_count();
    info.gpu_absent_reason = fp.gpus > 0 ? reader->gpu_absent_reason() : "a cpu job";
    info.str_attrs["hostnames"] = base::hostname();
    info.str_attrs["runner"] = "gridrun-exec";
    info.str_attrs["command_argv"] =
        base::dump_line(base::Json(jobs::resolve_command(job.params, job.id, job.run)));
    info.attempt_hostname = info.attempt_hostnames = base::hostname();
    // Every rank's host, as gridrun-train gathers them: under srun, the step's node list.
    if (const char* nl = std::getenv("SLURM_STEP_NODELIST"); nl && world > 1)
      if (const auto hosts = expand_hostlist(nl); !hosts.empty()) {
        std::string joined;
        for (const auto& h : hosts) joined += (joined.empty() ? "" : ",") + h;
        info.attempt_hostnames = joined;
        info.str_attrs["hostnames"] = joined;
      }
    // The launcher's facts about the job (phase, sitting, cores, GPUs), as gridrun-train records
    // them: the report finds a job's phase and sitting here.
    if (const auto it = job.meta.find("sitting"); it != job.meta.end()) info.attempt_sitting = it->second;
    for (const auto& [k, v] : job.meta) info.str_attrs["meta." + k] = v;
    info_ = std::move(info);
    // A resumed attempt keeps the earlier attempts' rows before the step the program resumes at,
    // which only its first step line tells: the file is reopened then (writer()), and the util
    // rows sampled until then wait in memory (a few per second of start-up). A fresh one now.
    if (!o.resume) open_writer(0);
    ranks_ = world;
    hw::SamplerOptions so;
    so.hz = o.util_hz;
    // Rank 0 samples its own program; the other ranks' columns are their latest reports (NaN
    // before one, or when their folder could not be used).
    sampler_ = std::make_unique<hw::UtilSampler>(std::move(reader), so, [this, world](hw::UtilSample s) {
      s.rank_cpu_pct.resize(static_cast<std::size_t>(world), kNaN);
      s.rank_rss_bytes.resize(static_cast<std::size_t>(world), kNaN);
      for (int r = 1; peers_ && r < world; ++r)
        std::tie(s.rank_cpu_pct[static_cast<std::size_t>(r)], s.rank_rss_bytes[static_cast<std::size_t>(r)]) =
            peers_->util(r);
      std::lock_guard<std::mutex> lock(writer_mu_);
      if (writer_)
        writer_->append_util(s);
      else if (early_util_.size() < kMaxEarlyUtil)
        early_util_.push_back(std::move(s));
    });
  }

  void step(const StepRecord& r) {
    const auto now = Clock::now();
    last_step_unix_ = base::unix_now();
    if (steps_ == 0) first_step_unix_ = last_step_unix_;
    const double wall = seconds(now - t0_);
    // The launch (up to first_step_unix) includes the first step, which has no time.
    const double step_s = clock_.lap();
    ++steps_;
    results::StepRow row;
    row.step = r.step.value_or(steps_);
    results::JobWriter& w = writer(row.step);
    row.epoch = epoch_ + 1;
    row.wall_s = wall;
    row.loss = r.loss;
    row.step_s = step_s;
    row.samples_per_s = r.samples && step_s > 0 ? *r.samples / step_s : kNaN;
    row.data_s = row.forward_s = row.backward_s = row.optimizer_s = row.comm_s = row.exposed_comm_s = kNaN;
    row.rank_step_s.assign(static_cast<std::size_t>(ranks_), kNaN);
    row.rank_step_s[0] = step_s;
    for (const auto& [k, v] : r.metrics) summary_["last_" + k] = v;
    beat(row.step, wall, false);
    if (!peers_) return w.append_step(row);
    // The other ranks' seconds of this step come through their files, a moment later: the row
    // waits for them, up to kPeerWait (then NaN where one is missing).
    pending_.push_back({std::move(row), now});
    write_ready(false);
  }

  // Called by the supervising loop a few times a second: the other ranks' news.
  void tick() {
    if (!peers_) return;
    peers_->poll();
    write_ready(false);
  }

  void epoch(const EpochRecord& r) {
    const auto now = Clock::now();
    // The steps of the first epoch, unless the step limit cut it short (a calibration run).
    if (first_epoch_steps_ < 0)
      first_epoch_steps_ = job_.params.max_steps > 0 && steps_ >= job_.params.max_steps ? 0 : steps_;
    results::EpochRow row;
    epoch_ = r.epoch.value_or(epoch_ + 1);
    row.epoch = epoch_;
    row.train_loss = r.train_loss.value_or(kNaN);
    row.train_acc = r.train_acc.value_or(kNaN);
    row.test_loss = r.test_loss.value_or(kNaN);
    row.test_acc = r.test_acc.value_or(kNaN);
    row.epoch_s = seconds(now - last_epoch_);
    row.wall_s = seconds(now - t0_);
    last_epoch_ = now;
    results::JobWriter& w = writer(kKeepEvery);
    w.append_epoch(row);
    w.flush();
    if (r.test_acc) summary_["final_test_acc"] = *r.test_acc;
    if (r.test_loss) summary_["final_test_loss"] = *r.test_loss;
  }

  std::int64_t steps() const { return steps_; }

  void summary(const SummaryRecord& r) {
    for (const auto& [k, v] : r.values) summary_[k] = v;
  }

  void finish(results::Status status, const std::string& reason, int exit_code) {
    sampler_.reset();
    if (peers_ && status == results::Status::Completed) {
      // The other ranks' programs end with ours (their last allreduce is ours): their last lines
      // are a moment away at most. A stopped job does not wait (its launcher may kill it soon).
      const auto until = Clock::now() + kFinishWait;
      for (peers_->poll();
           !pending_.empty() && !peers_->complete(pending_.back().row.step) && Clock::now() < until;
           peers_->poll())
        ::usleep(20000);
    }
    if (peers_) write_ready(true);
    const double wall = seconds(Clock::now() - t0_);
    summary_["exit_code"] = exit_code;
    summary_["wall_s"] = wall;
    // What calibration reads (scheduler figures_from_file), as gridrun-train writes it: the launch,
    // the first step, the last one, and the steps per epoch: the program's own declaration
    // (a summary record's steps_per_epoch), else the first full epoch's steps; 0 = unknown.
    summary_["launched_unix"] = o_.launched_at > 0 ? o_.launched_at : start_unix_;
    if (steps_ > 0) summary_["first_step_unix"] = first_step_unix_;
    // Training ends with the last step: what follows (the program's evaluation, its exit) is the
    // tail calibration measures from there to the launcher's end, as for gridrun-train.
    summary_["finished_unix"] = steps_ > 0 ? last_step_unix_ : base::unix_now();
    if (!summary_.count("steps_per_epoch"))
      summary_["steps_per_epoch"] = static_cast<double>(std::max<std::int64_t>(first_epoch_steps_, 0));
    if (o_.launched_at > 0) summary_["time_launch_s"] = std::max(0.0, start_unix_ - o_.launched_at);
    beat(steps_, wall, true);
    writer(kKeepEvery).finish(status, reason, summary_);
  }

 private:
  static double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }

  // Writes the waiting step rows, in order, whose every rank has reported, or that waited long
  // enough, or all of them (`all`).
  void write_ready(bool all) {
    const auto now = Clock::now();
    while (!pending_.empty()) {
      Pending& p = pending_.front();
      if (!all && !peers_->complete(p.row.step) && now - p.at < kPeerWait) break;
      for (int r = 1; r < ranks_; ++r)
        p.row.rank_step_s[static_cast<std::size_t>(r)] = peers_->step_s(r, p.row.step).value_or(kNaN);
      writer(p.row.step).append_step(p.row);
      peers_->drop_through(p.row.step);
      pending_.pop_front();
    }
  }

  // How long a step row waits for the other ranks' seconds (only of ranks that print step records:
  // RankReportReader::complete), which usually come within milliseconds (a DDP step ends on every
  // rank at its allreduce), later from a loaded machine or through a shared folder between hosts.
  // A kill -9 of gridrun-exec itself loses at most this much of the rows.
  static constexpr std::chrono::seconds kPeerWait{3};
  static constexpr std::chrono::seconds kFinishWait{1};
  struct Pending {
    results::StepRow row;
    Clock::time_point at;
  };

  // A resumed attempt that ends or reports an epoch before any step keeps every earlier row.
  static constexpr std::int64_t kKeepEvery = std::numeric_limits<std::int64_t>::max();
  // Util rows held until a resumed attempt's file is open (at 2 Hz, about 8 minutes of start-up).
  static constexpr std::size_t kMaxEarlyUtil = 1000;

  // The writer, opened now if a resumed attempt had not yet: its rows from step `resume_at` on
  // are redone by the program and dropped (results::JobWriter::create).
  results::JobWriter& writer(std::int64_t resume_at) {
    std::lock_guard<std::mutex> lock(writer_mu_);
    if (!writer_) {
      open_writer(std::max<std::int64_t>(resume_at, 1));
      for (const auto& u : early_util_) writer_->append_util(u);
      early_util_.clear();
    }
    return *writer_;
  }
  void open_writer(std::int64_t resume_from_step) {
    info_.resume_from_step = resume_from_step;
    writer_ = results::JobWriter::create(o_.out_dir, info_);
  }

  void beat(std::int64_t step, double wall, bool force) {
    if (o_.heartbeat_file.empty()) return;
    const auto now = Clock::now();
    if (!force && now - last_beat_ < std::chrono::seconds(1)) return;
    last_beat_ = now;
    run::Progress p;
    p.step = step;
    p.total_steps = job_.params.max_steps;
    p.epoch = epoch_ + 1;
    p.epochs = job_.params.epochs;
    p.wall_s = wall;
    p.unix_s = base::unix_now();
    try {
      base::replace_file(o_.heartbeat_file, run::progress_line(p));
    } catch (const std::exception&) {
      // A full disk must not end the job; the watchdog then sees a stale heartbeat.
    }
  }

  const ExecOptions& o_;
  const jobs::Job& job_;
  std::unique_ptr<RankReportReader> peers_;
  std::deque<Pending> pending_;
  StepClock clock_;
  results::JobFileInfo info_;
  std::mutex writer_mu_;  // writer_ and early_util_: the sampler's thread appends util rows
  std::unique_ptr<results::JobWriter> writer_;
  std::vector<hw::UtilSample> early_util_;
  std::unique_ptr<hw::UtilSampler> sampler_;
  results::Summary summary_;
  Clock::time_point t0_, last_epoch_{Clock::now()}, last_beat_{};
  double start_unix_ = base::unix_now(), first_step_unix_ = kNaN, last_step_unix_ = kNaN;
  std::int64_t steps_ = 0, epoch_ = 0, first_epoch_steps_ = -1;
  int ranks_ = 1;
};

// A job that ended before the program ran still gets its results file, with the reason (one
// function with gridrun-train's, which leaves an earlier attempt's file alone).
void record_early_failure(const ExecOptions& o, const jobs::Job& job, int world, const std::string& why) {
  results::JobFileInfo info;
  info.id = job.id;
  info.run = job.run;
  info.params = job.params;
  info.ranks = world;
  if (const std::string problem = results::record_early_failure(o.out_dir, info, why); !problem.empty())
    std::cerr << "gridrun-exec: job " << job.id << ": " << problem << "\n";
}

}  // namespace

std::optional<int> tasks_on_node(const char* list, int node) {
  // Slurm's compressed per-node counts: "2(x3),1" is 2, 2, 2, 1.
  if (!list || node < 0) return std::nullopt;
  int seen = 0;
  for (const std::string& item : base::split(list, ',')) {
    int count = 0, times = 1;
    if (std::sscanf(item.c_str(), "%d(x%d)", &count, &times) < 1 || count < 1 || times < 1)
      return std::nullopt;
    if (node < seen + times) return count;
    seen += times;
  }
  return std::nullopt;
}

std::vector<std::string> expand_hostlist(const std::string& list) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i < list.size()) {
    // One item: a prefix, then optionally [ranges] and a suffix, up to a comma outside brackets.
    const std::size_t open = list.find_first_of("[,", i);
    if (open == std::string::npos || list[open] == ',') {
      const std::size_t end = open == std::string::npos ? list.size() : open;
      if (end > i) out.push_back(list.substr(i, end - i));
      i = end + 1;
      continue;
    }
    const std::size_t close = list.find(']', open);
    if (close == std::string::npos) return {};
    const std::string prefix = list.substr(i, open - i);
    std::size_t end = list.find(',', close);
    if (end == std::string::npos) end = list.size();
    const std::string suffix = list.substr(close + 1, end - close - 1);
    for (const std::string& range : base::split(list.substr(open + 1, close - open - 1), ',')) {
      const std::size_t dash = range.find('-');
      const std::string lo = range.substr(0, dash),
                        hi = dash == std::string::npos ? lo : range.substr(dash + 1);
      if (lo.empty() || hi.empty() || lo.find_first_not_of("0123456789") != std::string::npos ||
          hi.find_first_not_of("0123456789") != std::string::npos || lo.size() > 9 || hi.size() > 9)
        return {};
      const long a = std::stol(lo), b = std::stol(hi);
      if (b < a || b - a > 100000) return {};
      for (long k = a; k <= b; ++k) {
        std::string n = std::to_string(k);
        if (n.size() < lo.size()) n.insert(0, lo.size() - n.size(), '0');
        out.push_back(prefix + n + suffix);
      }
    }
    i = end + 1;
  }
  return out;
}

RankFacts rank_facts() {
  RankFacts f;
  if (std::getenv("OMPI_COMM_WORLD_RANK")) {
    f.rank = env_int("OMPI_COMM_WORLD_RANK", 0);
    f.world = env_int("OMPI_COMM_WORLD_SIZE", 1);
    f.local_rank = env_int("OMPI_COMM_WORLD_LOCAL_RANK", f.rank);
    f.local_world = env_int("OMPI_COMM_WORLD_LOCAL_SIZE", f.world);
  } else if (std::getenv("SLURM_PROCID")) {
    f.rank = env_int("SLURM_PROCID", 0);
    f.world = env_int("SLURM_NTASKS", 1);
    f.local_rank = env_int("SLURM_LOCALID", 0);
    f.local_world = tasks_on_node(std::getenv("SLURM_STEP_TASKS_PER_NODE"), env_int("SLURM_NODEID", 0))
                        .value_or(env_int("SLURM_NTASKS_PER_NODE", f.world));
  } else if (std::getenv("PMI_RANK")) {
    f.rank = env_int("PMI_RANK", 0);
    f.world = env_int("PMI_SIZE", 1);
    f.local_rank = f.rank;
    f.local_world = f.world;
  }
  if (f.world < 1) f.world = 1;
  return f;
}

namespace {

// Where rank 0's program listens for torch.distributed's env:// rendezvous (MASTER_ADDR/PORT).
struct Endpoint {
  std::string addr;
  int port = 0;
};

// Rank 0's address as the other ranks reach it: loopback when every rank is on this host; else
// the first interface the site named for traffic between hosts (GLOO_SOCKET_IFNAME, then
// NCCL_SOCKET_IFNAME: `gridrun submit --network` exports them), else the host name.
std::string rank0_address(const RankFacts& rf) {
  if (rf.local_world >= rf.world) return "127.0.0.1";
  for (const char* var : {"GLOO_SOCKET_IFNAME", "NCCL_SOCKET_IFNAME"}) {
    const char* v = std::getenv(var);
    if (!v || !*v) continue;
    const std::vector<std::string> names = base::split(v, ',');
    if (names.empty()) continue;
    if (std::string a = base::interface_ipv4(names.front()); !a.empty()) return a;
  }
  return base::hostname();
}

// A multi-rank job started without --master-port (a Slurm step: srun starts the ranks, nobody
// picks a port for them beforehand). Rank 0 picks a free port and publishes it with its address in
// the job's work folder, which every host sees (it lies in the run folder, as the results do),
// under the launch's --launched-at, the one value every rank of one launch was given; the other
// ranks wait for that line. A file of an earlier attempt has another key and is never used.
Endpoint rendezvous(const ExecOptions& o, const RankFacts& rf, const std::string& work) {
  if (!(o.launched_at > 0))
    throw std::invalid_argument(
        "gridrun-exec: a job of more than one rank needs --master-port, or --launched-at (the same "
        "value on every rank) to meet through its work folder");
  const std::string key = launch_key(o.launched_at, 0);  // launched_at > 0: its text
  const std::string file = work + "/.rendezvous";
  if (rf.rank == 0) {
    Endpoint e{rank0_address(rf), base::free_local_port()};
    base::write_file_atomic(file, key + " " + e.addr + " " + std::to_string(e.port) + "\n");
    return e;
  }
  constexpr int kWaitS = 300;
  const auto deadline = Clock::now() + std::chrono::seconds(kWaitS);
  for (;;) {
    if (const auto text = base::try_read_file(file, base::kinds::kRendezvous)) {
      char got[64] = {}, addr[256] = {};
      int port = 0;
      if (std::sscanf(text->c_str(), "%63s %255s %d", got, addr, &port) == 3 && got == key && port > 0 &&
          port < 65536)
        return Endpoint{addr, port};
    }
    if (stop_signal().load() != 0 || !alive(o.owner_pid))
      throw std::runtime_error("stopped while waiting for rank 0's address in " + file);
    if (Clock::now() > deadline)
      throw std::runtime_error("rank 0 published no address in " + file + " within " +
                               std::to_string(kWaitS) + " s (is the run folder shared by every host?)");
    ::usleep(50000);
  }
}

// The program's environment: torch.distributed's env:// variables, gridrun's own, the helper on
// PYTHONPATH, then the grid's env: (which may not touch the first two: the grid loader refuses).
base::SpawnOptions program(const ExecOptions& o, const jobs::Job& job, const RankFacts& rf,
                           const std::string& work, const std::string& ckpt, const Endpoint& master) {
  base::SpawnOptions so;
  so.argv = jobs::resolve_command(job.params, job.id, job.run);
  so.env_set = {"RANK=" + std::to_string(rf.rank),
                "LOCAL_RANK=" + std::to_string(rf.local_rank),
                "WORLD_SIZE=" + std::to_string(rf.world),
                "LOCAL_WORLD_SIZE=" + std::to_string(rf.local_world),
                "MASTER_ADDR=" + master.addr,
                "MASTER_PORT=" + std::to_string(master.port),
                "GRIDRUN_JOB_ID=" + job.id,
                "GRIDRUN_RUN=" + job.run,
                "GRIDRUN_PARAMS=" + jobs::program_params_json(job.params),
                "GRIDRUN_CHECKPOINT_DIR=" + ckpt,
                "GRIDRUN_RESUME=" + std::string(o.resume ? "1" : "0"),
                "GRIDRUN_MAX_STEPS=" + std::to_string(job.params.max_steps)};
  if (const std::string h = helper_dir(); !h.empty()) {
    const char* pp = std::getenv("PYTHONPATH");
    so.env_set.push_back("PYTHONPATH=" + h + (pp && *pp ? ":" + std::string(pp) : ""));
  }
  for (const auto& [k, v] : jobs::env_from_json(job.params.command_env)) so.env_set.push_back(k + "=" + v);
  so.pipe_stdout = so.pipe_stderr = true;
  so.new_process_group = true;  // its own workers (data loaders) get the forwarded signals too
  so.reset_signals = true;
  so.cwd = work;
  return so;
}

// Watches one started program to its end: passes its output through, feeds rank 0's records to
// the Recorder, forwards a stop (our signal, the owner gone, a non-finite loss) and escalates to
// SIGKILL after the grace.
class Supervisor {
 public:
  // `time_limit`: the job's own wall-time limit (params.def), enforced here as Slurm enforces a
  // task's: SIGTERM, then SIGKILL after the grace. "" = none.
  // One of `rec` (rank 0) and `peer` (a rank > 0 that reports) or neither.
  Supervisor(const ExecOptions& o, base::Child& child, Recorder* rec, PeerReporter* peer,
             const std::string& time_limit, std::int64_t max_steps)
      : o_(o),
        child_(child),
        rec_(rec),
        peer_(peer),
        time_limit_text_(time_limit),
        job_max_steps_(max_steps) {
    if (const std::int64_t s = time_limit.empty() ? 0 : jobs::time_limit_seconds(time_limit); s > 0)
      deadline_ = Clock::now() + std::chrono::seconds(s);
  }

  void run() {
    while (out_open_ || err_open_ || !code_) {
      poll_output();
      if (rec_) rec_->tick();
      if (const int sig = stop_signal().exchange(0); sig != 0) {
        interrupted_ = true;
        stop(sig == SIGUSR1 ? SIGUSR1 : SIGTERM);
      }
      if (!interrupted_ && !timed_out_ && deadline_ && Clock::now() > *deadline_) {
        std::cerr << "gridrun-exec: time_limit " << time_limit_text_ << " reached; stopping the program\n";
        timed_out_ = true;
        stop(SIGTERM);
      }
      if (!interrupted_ && !alive(o_.owner_pid)) {
        std::cerr << "gridrun-exec: owner PID " << o_.owner_pid << " is gone; stopping the program\n";
        interrupted_ = true;
        stop(SIGTERM);
      }
      if (kill_at_ && !code_ && Clock::now() > *kill_at_) child_.signal(SIGKILL);
      if (!code_) code_ = child_.try_wait();
      // A program that ended but left a process holding its output open: read on briefly only.
      if (code_ && (out_open_ || err_open_)) {
        if (!drain_until_) drain_until_ = Clock::now() + std::chrono::seconds(2);
        if (Clock::now() > *drain_until_) break;
      }
    }
    child_.close_output();
  }

  // The job's status, reason and exit code from how the program ended.
  int finish() {
    const int c = code_.value_or(1);
    int exit_code = run::kExitFailure;
    results::Status status = results::Status::Failed;
    std::string reason;
    // Past max_steps the program was stopped on purpose: however it ended, the job is done.
    const bool completed = past_limit_ || (c == 0 && !timed_out_);
    if (diverged_) {
      exit_code = run::kExitDiverged;
      status = results::Status::Diverged;
      reason = diverged_why_;
    } else if (completed) {
      exit_code = run::kExitCompleted;
      status = results::Status::Completed;
    } else if (timed_out_) {
      // Not retried as an interruption: the same limit would stop it again (a failure, which
      // `gridrun run --retries` retries only when asked).
      exit_code = run::kExitFailure;
      reason = "time_limit " + time_limit_text_ + " reached: the program was stopped (exit " +
               std::to_string(c) + ")";
    } else if (interrupted_) {
      exit_code = run::kExitInterrupted;
      status = results::Status::Interrupted;
      reason = "interrupted: the program was stopped (exit " + std::to_string(c) + ")";
    } else {
      exit_code = c == 2 ? run::kExitBadInput : run::kExitFailure;
      reason = (c > 128 ? "the program was killed by signal " + std::to_string(c - 128)
                        : "the program exited " + std::to_string(c)) +
               (tail_.text().empty() ? "" : ": " + tail_.text());
    }
    if (rec_) rec_->finish(status, reason, c);
    return exit_code;
  }

 private:
  void poll_output() {
    pollfd fds[2];
    nfds_t n = 0;
    if (out_open_) fds[n++] = {child_.stdout_fd(), POLLIN, 0};
    if (err_open_) fds[n++] = {child_.stderr_fd(), POLLIN, 0};
    if (n == 0) {
      ::usleep(100000);
      return;
    }
    if (::poll(fds, n, 200) < 0) return;  // EINTR: a signal, looked at by the caller
    for (nfds_t i = 0; i < n; ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      if (fds[i].fd == child_.stdout_fd())
        out_open_ = out_.read(fds[i].fd, [this](const std::string& l, bool whole) { on_out(l, whole); });
      else
        err_open_ = err_.read(fds[i].fd, [this](const std::string& l, bool) { on_err(l); });
    }
  }

  void stop(int sig) {
    if (kill_at_) return;
    child_.signal(sig);
    kill_at_ = Clock::now() +
               std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(o_.stop_grace_s));
  }

  void warn(const std::string& what) {
    if (warnings_++ < 5)
      std::cerr << "gridrun-exec: warning: output line " << line_no_ << ": " << what << "\n";
  }

  void on_out(const std::string& line, bool whole) {
    ++line_no_;
    // A rank > 0's step records time its steps for rank 0's file (rank_report.hpp) and are not
    // passed on: the job's log has rank 0's records once, not once per rank.
    if (peer_ && whole) {
      const Record r = parse_record(line);
      if (const auto* s = std::get_if<StepRecord>(&r)) return peer_->step(*s);
    }
    std::fwrite(line.data(), 1, line.size(), stdout);
    std::fputc('\n', stdout);
    std::fflush(stdout);
    if (!rec_ || diverged_) return;
    if (!whole) return warn("longer than " + std::to_string(kMaxRecordLine) + " bytes: not a record");
    const Record r = parse_record(line);
    if (const auto* s = std::get_if<StepRecord>(&r)) {
      rec_->step(*s);
      // max_steps (GRIDRUN_MAX_STEPS) is the job's step limit, as gridrun-train's: a program that
      // goes past it (one that ignores the variable, under a calibration's few steps) is stopped,
      // and the job counts as completed with its rows.
      if (job_max_steps_ > 0 && rec_->steps() > job_max_steps_ && !past_limit_) {
        past_limit_ = true;
        std::cerr << "gridrun-exec: step " << rec_->steps() << " is past max_steps " << job_max_steps_
                  << " (GRIDRUN_MAX_STEPS); stopping the program\n";
        stop(SIGTERM);
      }
      if (!std::isfinite(s->loss)) {
        diverged_ = true;
        diverged_why_ = "diverged: training loss " + std::string(std::isnan(s->loss) ? "NaN" : "inf") +
                        (s->step ? " at step " + std::to_string(*s->step) : "");
        stop(SIGTERM);
      }
    } else if (const auto* e = std::get_if<EpochRecord>(&r)) {
      rec_->epoch(*e);
    } else if (const auto* m = std::get_if<SummaryRecord>(&r)) {
      rec_->summary(*m);
    } else if (const auto* b = std::get_if<BadRecord>(&r)) {
      warn(b->why);
    }
  }

  void on_err(const std::string& line) {
    std::fwrite(line.data(), 1, line.size(), stderr);
    std::fputc('\n', stderr);
    tail_.add(line);
  }

  const ExecOptions& o_;
  base::Child& child_;
  Recorder* rec_;
  PeerReporter* peer_;
  LineReader out_, err_;
  Tail tail_;
  bool out_open_ = true, err_open_ = true, diverged_ = false, interrupted_ = false, timed_out_ = false;
  std::string time_limit_text_;
  std::int64_t job_max_steps_ = 0;
  bool past_limit_ = false;
  std::optional<Clock::time_point> deadline_;
  std::string diverged_why_;
  std::int64_t line_no_ = 0, warnings_ = 0;
  std::optional<int> code_;
  std::optional<Clock::time_point> kill_at_, drain_until_;
};

}  // namespace

int run_job(const ExecOptions& o) {
  const jobs::Job job = jobs::read_job_file(o.job_file);
  if (jobs::model_kind(job.params) != jobs::ModelKind::command || job.params.command.empty())
    throw std::invalid_argument(o.job_file + ": job " + job.id + " is no command job (model " +
                                job.params.model + "); gridrun-train runs it");
  const RankFacts rf = rank_facts();
  const run::RunDir rd = run::RunDir::of_results_dir(o.out_dir);
  const std::string work = rd.root() + "/work/" + job.id, ckpt = rd.checkpoint_dir(job.id);
  std::error_code ec;
  fs::create_directories(work, ec);
  fs::create_directories(ckpt, ec);
  install_stop_handlers();
  Endpoint master{o.master_addr, o.master_port};
  if (master.port == 0) {
    if (rf.world > 1)
      master = rendezvous(o, rf, work);
    else
      master.port = base::free_local_port();
  }
  // Rank 0 of several: its program's store listens on a private port behind the relay, which
  // takes the other ranks' connections on the job's port at once (store_relay.hpp).
  std::unique_ptr<StoreRelay> relay;
  Endpoint own = master;
  if (rf.world > 1 && rf.rank == 0) {
    try {
      const int store_port = base::free_local_port();
      relay = std::make_unique<StoreRelay>(master.port, store_port);
      own.port = store_port;
    } catch (const std::exception& e) {
      std::cerr << "gridrun-exec: no rendezvous relay (" << e.what() << "); the program listens on "
                << master.port << " itself\n";
    }
  }
  const base::SpawnOptions so = program(o, job, rf, work, ckpt, own);
  base::Child child;
  try {
    child = base::spawn(so);
  } catch (const std::exception& e) {
    const std::string why = std::string("cannot start the command: ") + e.what();
    if (rf.rank == 0) record_early_failure(o, job, rf.world, why);
    std::cerr << "gridrun-exec: " << why << "\n";
    return run::kExitBadInput;
  }
  std::unique_ptr<Recorder> rec;
  std::unique_ptr<PeerReporter> peer;
  const std::string key = launch_key(o.launched_at, master.port);
  const std::string ranks_dir = rf.world > 1 ? rank_report_dir(work, rf.rank == 0) : "";
  if (rf.rank == 0) {
    rec = std::make_unique<Recorder>(
        o, job, rf.world, child.pid(),
        ranks_dir.empty() ? nullptr : std::make_unique<RankReportReader>(ranks_dir, key, rf.world));
  } else if (!ranks_dir.empty()) {
    try {
      peer = std::make_unique<PeerReporter>(o, ranks_dir, key, rf.rank, child.pid());
    } catch (const std::exception& e) {
      std::cerr << "gridrun-exec: rank " << rf.rank << " reports no step times: " << e.what() << "\n";
    }
  }
  Supervisor sup(o, child, rec.get(), peer.get(), job.params.time_limit, job.params.max_steps);
  sup.run();
  return sup.finish();
}

}  // namespace gridrun::exec
