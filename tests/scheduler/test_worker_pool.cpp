// WorkerPool (scheduler/src/worker_pool.hpp): each worker's explicit state through its life, with
// real processes on real named pipes. The executor here is a stand-in (the real path, mpirun and
// gridrun-train --worker, is the scenario tests scheduler_e2e_warm_*): it starts a shell whose child
// speaks the warm worker's protocol in Python, answering each job with a done line that carries the
// job's ticket and its own pid (a child of the launched process, as a rank is of mpirun's).
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "executor.hpp"
#include "gridrun/base/host.hpp"
#include "gridrun/base/spawn.hpp"
#include "worker_pool.hpp"

using namespace gridrun;
using scheduler::WorkerState;

namespace {

// The warm worker's loop: a done line for each job (the first from argv, then one per task line),
// until its task pipe reads end-of-file (retired).
constexpr const char* kFakeWorker = R"(
import json, os, sys
folder, job = sys.argv[1], sys.argv[2]
ticket = os.environ["GRIDRUN_WORKER_TICKET"]
tasks = open(os.path.join(folder, "task.0"))
done = open(os.path.join(folder, "done"), "w")
while True:
    done.write(json.dumps({"job": job, "code": 0, "rss_bytes": 1e8, "retiring": False,
                           "ticket": ticket, "pid": os.getpid()}) + "\n")
    done.flush()
    line = tasks.readline()
    if not line:
        break
    task = json.loads(line)
    job, ticket = os.path.basename(task["job"])[:-len(".json")], task["ticket"]
)";

class Launched : public scheduler::RunningJob {
 public:
  explicit Launched(base::Child c) : c_(std::move(c)) {}
  int pid() const override { return c_.pid(); }
  std::optional<int> try_wait() override { return c_.try_wait(); }
  void interrupt() override { c_.signal(SIGTERM); }
  void kill() override { c_.signal(SIGKILL); }  // its group: the shell and its child

 private:
  base::Child c_;
};

// A worker's first launch: `sh` whose child is the Python loop; a cold job: a shell that exits 0.
class FakeExecutor : public scheduler::Executor {
 public:
  const char* name() const override { return "fake"; }
  std::vector<std::string> command(const scheduler::LaunchSpec& s) const override {
    if (s.worker_dir.empty()) return {"/bin/sh", "-c", "exit 0"};
    return {"/bin/sh", "-c",        "\"$0\" \"$@\" & wait", "/usr/bin/python3",
            "-c",      kFakeWorker, s.worker_dir,           s.job_id};
  }
  std::unique_ptr<scheduler::RunningJob> launch(const scheduler::LaunchSpec& s) override {
    ++launches;
    base::SpawnOptions so;
    so.argv = command(s);
    if (!s.worker_ticket.empty()) so.env_set.push_back("GRIDRUN_WORKER_TICKET=" + s.worker_ticket);
    so.new_process_group = true;
    return std::make_unique<Launched>(base::spawn(so));
  }
  int launches = 0;
};

scheduler::LaunchSpec spec_for(const std::string& dir, const std::string& id, const std::string& key,
                               bool warm) {
  scheduler::LaunchSpec s;
  s.job_id = id;
  s.job_file = dir + "/jobs/" + id + ".json";
  s.warm = warm;
  s.workers_dir = dir + "/workers";
  s.process_key = key;
  s.host = "localhost";
  s.core_ids = {0};
  s.place.node = 0;
  s.place.cores = {0};
  s.train_bin = "fake";
  return s;
}

// The job's end: its done message (the pool's event descriptors) or its process's exit; nullopt
// after 30 s.
std::optional<int> wait_end(scheduler::RunningJob& job, scheduler::WorkerPool& pool) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (std::chrono::steady_clock::now() < deadline) {
    if (auto code = job.try_wait()) return code;
    std::vector<pollfd> fds;
    for (int fd : pool.event_fds()) fds.push_back({fd, POLLIN, 0});
    ::poll(fds.data(), fds.size(), 100);
  }
  return std::nullopt;
}

}  // namespace

TEST(WorkerPool, AWorkerGoesFromStartingToIdleToBusyAndRetiresForAnotherProcess) {
  char tmpl[] = "/tmp/gridrun-pool-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  FakeExecutor exec;
  int worker_pid = 0;
  {
    scheduler::WorkerPool pool(exec);
    // Pushed: a new worker runs its first job.
    auto first = pool.launch(spec_for(dir, "a00000000001", "cpu|1|1|1", true));
    worker_pid = first->pid();
    EXPECT_EQ(pool.count(WorkerState::starting), 1u);
    EXPECT_FALSE(first->warm());
    ASSERT_EQ(wait_end(*first, pool), 0);
    EXPECT_EQ(pool.count(WorkerState::idle), 1u);
    ASSERT_EQ(pool.idle().size(), 1u);
    EXPECT_EQ(pool.idle()[0].process_key, "cpu|1|1|1");
    EXPECT_EQ(pool.idle()[0].place.cores, std::vector<int>{0});
    const auto same = spec_for(dir, "a00000000002", "cpu|1|1|1", true);
    EXPECT_NE(pool.idle_worker_for(same).find("warm worker w1"), std::string::npos);
    // Popped: the next job of the same process is handed over, no process started.
    auto second = pool.launch(same);
    EXPECT_TRUE(second->warm());
    EXPECT_EQ(second->pid(), worker_pid);
    EXPECT_EQ(pool.count(WorkerState::busy), 1u);
    ASSERT_EQ(wait_end(*second, pool), 0);
    EXPECT_EQ(pool.count(WorkerState::idle), 1u);
    EXPECT_EQ(exec.launches, 1);
    // A job of another process on its core: the idle worker retires, the job runs cold.
    const auto other = spec_for(dir, "b00000000001", "cpu|2|1|1", false);
    EXPECT_EQ(pool.idle_worker_for(other), "");
    auto cold = pool.launch(other);
    EXPECT_EQ(exec.launches, 2);
    EXPECT_EQ(pool.count(WorkerState::retiring), 1u);
    EXPECT_TRUE(pool.idle().empty());
    EXPECT_EQ(wait_end(*cold, pool), 0);
    // It reads end-of-file and leaves; reaped, its pipes' folder emptied.
    if (auto p = base::PinnedProcess::open(worker_pid)) p->wait_exit(30);
    EXPECT_EQ(pool.retire_idle(0), 0u);
    EXPECT_FALSE(std::filesystem::exists(dir + "/workers/w1/done"));
  }
  EXPECT_NE(::kill(worker_pid, 0), 0) << "the worker outlived its pool";
  std::filesystem::remove_all(dir);
}

// The pool's end: a worker still idle leaves (end-of-file), and nothing outlives the pool.
TEST(WorkerPool, NothingOutlivesThePool) {
  char tmpl[] = "/tmp/gridrun-pool-XXXXXX";
  ASSERT_NE(::mkdtemp(tmpl), nullptr);
  const std::string dir = tmpl;
  FakeExecutor exec;
  std::vector<int> pids;
  {
    scheduler::WorkerPool pool(exec);
    auto job = pool.launch(spec_for(dir, "c00000000001", "cpu|1|1|1", true));
    ASSERT_EQ(wait_end(*job, pool), 0);
    pids.push_back(job->pid());
    for (int k : base::children_of(job->pid())) pids.push_back(k);
    EXPECT_EQ(pids.size(), 2u);  // the shell and its Python child
    EXPECT_EQ(pool.count(WorkerState::idle), 1u);
  }
  for (int pid : pids) EXPECT_NE(::kill(pid, 0), 0) << "pid " << pid << " outlived the pool";
  std::filesystem::remove_all(dir);
}
