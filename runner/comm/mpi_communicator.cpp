// MpiCommunicator: collectives on CPU tensors over MPI.
//
// Why a progress thread: gradient buckets must be reduced while backward keeps computing. Open MPI
// 4.1 has no asynchronous progress for non-blocking collectives ("OMPI progress: no"), so an
// MPI_Iallreduce started during backward would mostly run inside the final MPI_Wait. A dedicated
// thread running blocking MPI_Allreduce makes progress for real. Every MPI call of this
// communicator goes through that one thread, in submission order, which (1) keeps the order of
// collectives identical on all ranks as long as submissions are (the bucket launcher guarantees
// it), (2) needs only MPI_THREAD_SERIALIZED, and (3) lets the submitting thread wait with a
// deadline: a collective that exceeds CommOptions::timeout_s aborts the job instead of hanging.
// MPI_THREAD_MULTIPLE is requested anyway so that MPI_Abort from the waiting thread is legal while
// the progress thread is blocked inside MPI.
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <functional>
#include <limits>
#include <mutex>
#include <thread>

#include "comm/comm_impl.hpp"
#include "comm/mpi_check.hpp"
#include "gridrun/base/host.hpp"
#include "gridrun/runner/errors.hpp"

namespace gridrun::runner::comm {

std::string mpi_error_string(int rc) {
  char msg[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(rc);
  return std::string(msg, static_cast<std::size_t>(len));
}

void throw_call_error(const char* call, const char* file, int line, const std::string& cause) {
  int rank = -1, inited = 0;
  MPI_Initialized(&inited);
  if (inited) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  throw CommError(std::string(file) + ":" + std::to_string(line) + ": " + call + " failed on rank " +
                  std::to_string(rank) + " (" + base::hostname() + "): " + cause);
}

namespace {

using Clock = std::chrono::steady_clock;

MPI_Datatype mpi_type(const at::Tensor& t) {
  return dtype_for<MPI_Datatype>(t,
                                 {{at::kFloat, MPI_FLOAT},
                                  {at::kDouble, MPI_DOUBLE},
                                  {at::kLong, MPI_INT64_T},
                                  {at::kInt, MPI_INT32_T},
                                  {at::kByte, MPI_UINT8_T},
                                  {at::kChar, MPI_INT8_T}},
                                 "MpiCommunicator", "fp32/fp64/int only on CPU");
}

void check_cpu_contiguous(const at::Tensor& t, const char* op) {
  if (!t.device().is_cpu() || !t.is_contiguous())
    throw CommError(std::string("MpiCommunicator::") + op + " needs a contiguous CPU tensor");
  if (t.numel() > std::numeric_limits<int>::max())
    throw CommError(std::string("MpiCommunicator::") + op + ": tensor too large for one MPI call");
}

class MpiCommunicator;

class MpiWork final : public Work {
 public:
  MpiWork(MpiCommunicator* owner, std::string what) : owner_(owner), what_(std::move(what)) {}
  void wait() override;
  double seconds() const override { return seconds_; }

  void complete(double secs, std::exception_ptr err) {
    {
      std::lock_guard<std::mutex> l(m_);
      seconds_ = secs;
      err_ = std::move(err);
      done_ = true;
    }
    cv_.notify_all();
  }

 private:
  MpiCommunicator* owner_;
  std::string what_;
  std::mutex m_;
  std::condition_variable cv_;
  bool done_ = false;
  double seconds_ = 0;
  std::exception_ptr err_;
};

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(const CommOptions& opts);
  ~MpiCommunicator() override;

  std::string name() const override { return "mpi"; }
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_rank_; }
  std::string host() const override { return host_; }
  std::string library_version() const override { return version_; }

  std::shared_ptr<Work> allreduce_sum(const at::Tensor& t) override;
  void broadcast(const at::Tensor& t, int root) override;
  void barrier() override {
    submit("barrier", [this] { MPI_CHECK(MPI_Barrier(comm_)); })->wait();
  }
  std::vector<double> allreduce_sum(const std::vector<double>& v) override {
    return reduce_host(v, MPI_SUM, "small allreduce (sum)");
  }
  std::vector<double> allreduce_max(const std::vector<double>& v) override {
    return reduce_host(v, MPI_MAX, "small allreduce (max)");
  }
  std::vector<double> gather(const std::vector<double>& mine, int root) override;
  std::vector<std::string> allgather_strings(const std::string& mine) override;
  [[noreturn]] void abort(int code, const std::string& why) override;

  double timeout_s() const { return opts_.timeout_s; }

 private:
  struct Op {
    std::shared_ptr<MpiWork> work;
    std::function<void()> fn;
  };

  std::shared_ptr<MpiWork> submit(std::string what, std::function<void()> fn);
  void progress_loop();
  std::vector<double> reduce_host(const std::vector<double>& v, MPI_Op mop, const char* what);
  int compute_local_rank();

  CommOptions opts_;
  MPI_Comm comm_ = MPI_COMM_NULL;
  bool owns_mpi_ = false;
  int rank_ = 0, size_ = 1, local_rank_ = 0;
  std::string host_, version_;
  std::mutex qm_;
  std::condition_variable qcv_;
  std::deque<Op> queue_;
  bool stop_ = false;
  std::thread thread_;
};

MpiCommunicator::MpiCommunicator(const CommOptions& opts) : opts_(opts) {
  int inited = 0;
  MPI_CHECK(MPI_Initialized(&inited));
  if (!inited) {
    int provided = 0;
    MPI_CHECK(MPI_Init_thread(nullptr, nullptr, MPI_THREAD_MULTIPLE, &provided));
    owns_mpi_ = true;
    if (provided < MPI_THREAD_SERIALIZED)
      throw CommError("MPI library grants only thread level " + std::to_string(provided) +
                      "; gridrun-train needs MPI_THREAD_SERIALIZED or better");
  }
  MPI_CHECK(MPI_Comm_dup(MPI_COMM_WORLD, &comm_));
  MPI_CHECK(MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN));
  MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  MPI_CHECK(MPI_Comm_size(comm_, &size_));
  host_ = base::hostname();
  local_rank_ = compute_local_rank();
  char ver[MPI_MAX_LIBRARY_VERSION_STRING] = {0};
  int len = 0;
  MPI_CHECK(MPI_Get_library_version(ver, &len));
  version_.assign(ver, len);
  if (auto nl = version_.find_first_of("\r\n,"); nl != std::string::npos) version_.resize(nl);
  thread_ = std::thread([this] { progress_loop(); });
}

MpiCommunicator::~MpiCommunicator() {
  {
    std::lock_guard<std::mutex> l(qm_);
    stop_ = true;
  }
  qcv_.notify_all();
  if (thread_.joinable()) thread_.join();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) {
    MPI_Comm_free(&comm_);
    if (owns_mpi_) MPI_Finalize();
  }
}

std::shared_ptr<Work> MpiCommunicator::allreduce_sum(const at::Tensor& t) {
  check_cpu_contiguous(t, "allreduce_sum");
  MPI_Datatype type = mpi_type(t);
  // The queued op holds a reference: the buffer outlives the call (a copy on purpose).
  at::Tensor keep = t;  // NOLINT(performance-unnecessary-copy-initialization)
  return submit("allreduce of " + std::to_string(t.numel()) + " elements", [this, keep, type] {
    MPI_CHECK(
        MPI_Allreduce(MPI_IN_PLACE, keep.data_ptr(), static_cast<int>(keep.numel()), type, MPI_SUM, comm_));
  });
}

void MpiCommunicator::broadcast(const at::Tensor& t, int root) {
  at::Tensor c = t.is_contiguous() ? t : t.contiguous();
  check_cpu_contiguous(c, "broadcast");
  MPI_Datatype type = mpi_type(c);
  submit("broadcast", [this, c, type, root] {
    MPI_CHECK(MPI_Bcast(c.data_ptr(), static_cast<int>(c.numel()), type, root, comm_));
  })->wait();
  if (!c.is_same(t)) t.copy_(c);
}

std::vector<double> MpiCommunicator::gather(const std::vector<double>& mine, int root) {
  if (size_ == 1) return mine;
  std::vector<double> out(rank_ == root ? mine.size() * size_ : 0);
  submit("gather", [&] {
    MPI_CHECK(MPI_Gather(mine.data(), static_cast<int>(mine.size()), MPI_DOUBLE, out.data(),
                         static_cast<int>(mine.size()), MPI_DOUBLE, root, comm_));
  })->wait();
  return out;
}

std::vector<std::string> MpiCommunicator::allgather_strings(const std::string& mine) {
  std::vector<std::string> res(size_);
  submit("allgather of strings", [&] {
    int n = static_cast<int>(mine.size());
    std::vector<int> lens(size_), displs(size_);
    MPI_CHECK(MPI_Allgather(&n, 1, MPI_INT, lens.data(), 1, MPI_INT, comm_));
    int total = 0;
    for (int i = 0; i < size_; ++i) {
      displs[i] = total;
      total += lens[i];
    }
    std::string all(total, '\0');
    MPI_CHECK(
        MPI_Allgatherv(mine.data(), n, MPI_CHAR, all.data(), lens.data(), displs.data(), MPI_CHAR, comm_));
    for (int i = 0; i < size_; ++i) res[i] = all.substr(displs[i], lens[i]);
  })->wait();
  return res;
}

void MpiCommunicator::abort(int code, const std::string& why) {
  std::fprintf(stderr, "gridrun-train: rank %d (%s): %s; aborting the job (exit %d)\n", rank_, host_.c_str(),
               why.c_str(), code);
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, code);
  std::_Exit(code);
}

std::shared_ptr<MpiWork> MpiCommunicator::submit(std::string what, std::function<void()> fn) {
  auto w = std::make_shared<MpiWork>(this, std::move(what));
  {
    std::lock_guard<std::mutex> l(qm_);
    queue_.push_back(Op{w, std::move(fn)});
  }
  qcv_.notify_one();
  return w;
}

void MpiCommunicator::progress_loop() {
  for (;;) {
    Op op;
    {
      std::unique_lock<std::mutex> l(qm_);
      qcv_.wait(l, [&] { return stop_ || !queue_.empty(); });
      if (queue_.empty()) return;  // stop requested and nothing left
      op = std::move(queue_.front());
      queue_.pop_front();
    }
    auto t0 = Clock::now();
    std::exception_ptr err;
    try {
      op.fn();
    } catch (...) {
      err = std::current_exception();
    }
    op.work->complete(std::chrono::duration<double>(Clock::now() - t0).count(), err);
  }
}

std::vector<double> MpiCommunicator::reduce_host(const std::vector<double>& v, MPI_Op mop, const char* what) {
  if (size_ == 1) return v;  // per-step metrics of a 1-rank job: no thread hand-off at all
  std::vector<double> out(v.size());
  submit(what, [&] {
    MPI_CHECK(MPI_Allreduce(v.data(), out.data(), static_cast<int>(v.size()), MPI_DOUBLE, mop, comm_));
  })->wait();
  return out;
}

// The launcher's local rank (device selection); falls back to a shared-memory split of the
// communicator when started by something else.
int MpiCommunicator::compute_local_rank() {
  for (const char* var : {"OMPI_COMM_WORLD_LOCAL_RANK", "SLURM_LOCALID", "MPI_LOCALRANKID"}) {
    if (const char* v = std::getenv(var)) return std::atoi(v);
  }
  MPI_Comm local;
  MPI_CHECK(MPI_Comm_split_type(comm_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local));
  int lr = 0;
  MPI_CHECK(MPI_Comm_rank(local, &lr));
  MPI_Comm_free(&local);
  return lr;
}

void MpiWork::wait() {
  std::unique_lock<std::mutex> l(m_);
  const auto limit = std::chrono::duration<double>(owner_->timeout_s());
  if (!cv_.wait_for(l, limit, [&] { return done_; })) {
    l.unlock();
    owner_->abort(kExitFailure, "collective '" + what_ + "' did not complete within " +
                                    std::to_string(static_cast<long>(owner_->timeout_s())) +
                                    " s (comm_timeout_s; another rank died, hung or diverged)");
  }
  if (err_) std::rethrow_exception(err_);
}

}  // namespace

std::unique_ptr<Communicator> make_mpi(const CommOptions& opts) {
  return std::make_unique<MpiCommunicator>(opts);
}

}  // namespace gridrun::runner::comm
