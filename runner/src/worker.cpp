// The warm worker's loop between jobs (worker.hpp).
#include "worker.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <iostream>
#include <string>
#include <vector>

#ifdef GRIDRUN_HAVE_NCCL
#include <c10/cuda/CUDACachingAllocator.h>
#include <torch/cuda.h>
#endif

#include "gridrun/base/file_kinds.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/runner/errors.hpp"
#include "signals.hpp"
#include "system_info.hpp"

namespace gridrun::runner {

namespace {
constexpr double kRssSlackBytes = 256.0 * 1024 * 1024;

// This rank's stdout or stderr appends to `path` from now on (the job's own log), never through a
// link (base::open_log_for_append; issue 57).
void redirect(int fd, const std::string& path) {
  if (path.empty()) return;
  std::string replaced;
  const base::UniqueFd f = base::open_log_for_append(path, base::kinds::kJobLog, replaced);
  if (!replaced.empty()) std::cerr << "gridrun-train: warning: " << base::printable_line(replaced) << "\n";
  ::dup2(f.get(), fd);
}
}  // namespace

void release_job_caches() {
#ifdef GRIDRUN_HAVE_NCCL
  if (torch::cuda::is_available()) c10::cuda::CUDACachingAllocator::emptyCache();
#endif
}

WarmWorker::WarmWorker(const RunnerOptions& first, Communicator& comm)
    : first_(first), comm_(comm), inbox_(run::open_worker_inbox(first.worker_dir, comm.rank())) {
  // The first job's ticket came in the environment (the launcher started the worker with it).
  if (const char* t = std::getenv(run::kWorkerTicketEnv)) ticket_ = t;
}

const RunnerOptions* WarmWorker::next() {
  const std::string finished = served_ ? job_.id : first_.id;
  release_job_caches();
  const auto rss = static_cast<double>(current_rss_bytes());
  if (base_rss_ < 0) base_rss_ = static_cast<std::int64_t>(rss);
  // Every rank's own bound; the worker leaves as a whole when any rank is past it.
  const bool past = rss > first_.worker_rss_growth * static_cast<double>(base_rss_) + kRssSlackBytes;
  const bool retiring = comm_.allreduce_max({past ? 1.0 : 0.0})[0] > 0;
  bool reported = true;
  if (comm_.rank() == 0)
    reported = inbox_.done.write_line(
        run::encode(run::WorkerDone{finished, 0, rss, retiring, ticket_, static_cast<int>(::getpid())}));
  if (!reported || retiring) return nullptr;  // (a launcher that is gone has closed the task pipes too)
  std::optional<std::string> line;
  try {
    for (bool eof = false; !line && !eof && StopSignal::received() == 0;)
      line = inbox_.task.read_line(1.0, &eof);
  } catch (const std::exception& e) {  // only the launcher writes it: the channel is broken, leave
    std::cerr << "gridrun-train: --worker: " << first_.worker_dir << ": " << e.what() << "; leaving\n";
    line.reset();
  }
  const double received = base::unix_now();
  // The ranks leave together or not at all: a stop signal reaches each rank at its own moment, and
  // the launcher may be writing the next job when it comes, so one rank can hold its job while
  // another has seen the stop (or its pipe's end); alone, the first would wait in the job's first
  // collective for ever. A rank that holds its job but saw the stop votes to leave too.
  const bool leave = !line || StopSignal::received() != 0;
  if (comm_.allreduce_max({leave ? 1.0 : 0.0})[0] > 0) return nullptr;
  run::WorkerTask task;
  try {
    task = run::decode_task(*line);
  } catch (const std::exception& e) {
    throw BadInput(std::string("gridrun-train: --worker: ") + e.what());
  }
  std::cout.flush();
  std::cerr.flush();
  std::fflush(nullptr);
  redirect(STDOUT_FILENO, task.log_out);
  redirect(STDERR_FILENO, task.log_err);
  job_ = next_job_options(task, first_);
  ticket_ = task.ticket;
  job_.main_unix = received;
  // Each rank read its own pipe: they must all have been given the same job.
  for (const std::string& id : comm_.allgather_strings(job_.id))
    if (id != job_.id)
      throw std::runtime_error("--worker: ranks were given different jobs (" + id + " and " + job_.id + ")");
  reset_peak_rss();
  served_ = true;
  return &job_;
}

}  // namespace gridrun::runner
