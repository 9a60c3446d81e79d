// NcclCommunicator: collectives on CUDA tensors over NCCL; compiled only when cmake/GpuDetect.cmake
// found CUDA, NCCL and a CUDA LibTorch (GRIDRUN_HAVE_NCCL).
//
// Design: rank 0 creates the ncclUniqueId and broadcasts it over MPI (an inner MpiCommunicator,
// which also serves the small host-side collectives: metrics, flags, hostnames). NCCL kernels run
// on the communicator's own CUDA stream so that gradient reductions overlap with backward kernels
// on LibTorch's stream; ordering is kept with events (the NCCL stream waits for the producer stream
// before each op; wait() makes the caller's current stream wait for the op). Every handle is RAII
// (stream, events, comm). wait() polls the op's completion event against a deadline and checks
// ncclCommGetAsyncError: a failed or timed-out collective calls ncclCommAbort (so no kernel stays
// stuck on the device) and then aborts the MPI job.
#include <ATen/ATen.h>
#include <ATen/cuda/CUDAContext.h>
#include <cuda_runtime_api.h>
#include <nccl.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <thread>
#include <type_traits>

#include "comm/comm_impl.hpp"
#include "comm/mpi_check.hpp"
#include "gridrun/runner/errors.hpp"

#define NCCL_CHECK(call) GRIDRUN_CHECKED_CALL(ncclResult_t, ncclSuccess, ncclGetErrorString, call, #call)
#define CUDA_CHECK(call) GRIDRUN_CHECKED_CALL(cudaError_t, cudaSuccess, cudaGetErrorString, call, #call)

namespace gridrun::runner::comm {

namespace {

using Clock = std::chrono::steady_clock;

ncclDataType_t nccl_type(const at::Tensor& t) {
  return dtype_for<ncclDataType_t>(
      t,
      {
        {at::kFloat, ncclFloat32}, {at::kDouble, ncclFloat64}, {at::kHalf, ncclFloat16},
#if NCCL_VERSION_CODE >= 21000
            {at::kBFloat16, ncclBfloat16},
#endif
            {at::kLong, ncclInt64}, {at::kInt, ncclInt32}, {
          at::kByte, ncclUint8
        }
      },
      "NcclCommunicator", "CUDA tensors of a type NCCL reduces");
}

// RAII for the CUDA runtime's stream and event handles: destroyed exactly once, on every path.
struct StreamDestroy {
  void operator()(cudaStream_t s) const { cudaStreamDestroy(s); }
};
struct EventDestroy {
  void operator()(cudaEvent_t e) const { cudaEventDestroy(e); }
};
using CudaStream = std::unique_ptr<std::remove_pointer_t<cudaStream_t>, StreamDestroy>;
using CudaEvent = std::unique_ptr<std::remove_pointer_t<cudaEvent_t>, EventDestroy>;

CudaStream make_stream() {
  cudaStream_t s = nullptr;
  CUDA_CHECK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  return CudaStream(s);
}

CudaEvent make_event(bool timing) {
  cudaEvent_t e = nullptr;
  CUDA_CHECK(cudaEventCreateWithFlags(&e, timing ? cudaEventDefault : cudaEventDisableTiming));
  return CudaEvent(e);
}

// Owns the ncclComm_t; aborting (not just destroying) when the communicator is in an error state.
class NcclComm {
 public:
  NcclComm(int nranks, const ncclUniqueId& id, int rank) {
    NCCL_CHECK(ncclCommInitRank(&c_, nranks, id, rank));
  }
  ~NcclComm() {
    if (!c_) return;
    if (aborted_) return;
    ncclCommDestroy(c_);
  }
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;
  ncclComm_t get() const { return c_; }
  void abort() noexcept {
    if (c_ && !aborted_) {
      ncclCommAbort(c_);
      aborted_ = true;
    }
  }
  ncclResult_t async_error() const {
    ncclResult_t e = ncclSuccess;
    if (c_ && !aborted_) ncclCommGetAsyncError(c_, &e);
    return e;
  }

 private:
  ncclComm_t c_ = nullptr;
  bool aborted_ = false;
};

class NcclCommunicator;

class NcclWork final : public Work {
 public:
  NcclWork(NcclCommunicator* owner, std::string what, at::Tensor keep)
      : owner_(owner),
        what_(std::move(what)),
        keep_(std::move(keep)),
        start_(make_event(true)),
        end_(make_event(true)) {}
  void wait() override;
  double seconds() const override { return seconds_; }
  cudaEvent_t start() const { return start_.get(); }
  cudaEvent_t end() const { return end_.get(); }

 private:
  NcclCommunicator* owner_;
  std::string what_;
  at::Tensor keep_;
  CudaEvent start_, end_;
  double seconds_ = 0;
  bool waited_ = false;
};

class NcclCommunicator final : public Communicator {
 public:
  explicit NcclCommunicator(const CommOptions& opts) : opts_(opts), host_comm_(make_mpi(opts)) {
    int ndev = 0;
    // A CUDA build on a machine without a GPU or driver (CI's CUDA lane, a login node) answers
    // cudaErrorNoDevice or cudaErrorInsufficientDriver here: that is the job asking for what this
    // machine lacks, bad input (exit 2) like a hidden device, not a runtime failure.
    const cudaError_t count_err = cudaGetDeviceCount(&ndev);
    if (count_err == cudaErrorNoDevice || count_err == cudaErrorInsufficientDriver) {
      (void)cudaGetLastError();  // clear the sticky error state of the runtime
      throw BadInput("device=gpu but " + host_comm_->host() + " has no usable GPU (CUDA: " +
                     cudaGetErrorString(count_err) + "); this build runs CPU jobs here");
    }
    CUDA_CHECK(count_err);
    if (ndev == 0)
      throw BadInput("device=gpu but no CUDA device is visible on " + host_comm_->host() +
                     " (CUDA_VISIBLE_DEVICES?)");
    device_ = host_comm_->local_rank() % ndev;
    CUDA_CHECK(cudaSetDevice(device_));
    stream_ = make_stream();
    ncclUniqueId id;
    at::Tensor idt = at::zeros({static_cast<long>(sizeof(id))}, at::kByte);
    if (host_comm_->rank() == 0) {
      NCCL_CHECK(ncclGetUniqueId(&id));
      std::memcpy(idt.data_ptr(), &id, sizeof(id));
    }
    host_comm_->broadcast(idt, 0);
    std::memcpy(&id, idt.data_ptr(), sizeof(id));
    comm_ = std::make_unique<NcclComm>(host_comm_->size(), id, host_comm_->rank());
    int v = 0;
    NCCL_CHECK(ncclGetVersion(&v));
    version_ = "NCCL " + std::to_string(v / 10000) + "." + std::to_string((v / 100) % 100) + "." +
               std::to_string(v % 100);
  }

  ~NcclCommunicator() override {
    if (stream_) cudaStreamSynchronize(stream_.get());
  }

  std::string name() const override { return "nccl"; }
  int rank() const override { return host_comm_->rank(); }
  int size() const override { return host_comm_->size(); }
  int local_rank() const override { return host_comm_->local_rank(); }
  std::string host() const override { return host_comm_->host(); }
  std::string library_version() const override { return version_; }
  int device() const { return device_; }

  std::shared_ptr<Work> allreduce_sum(const at::Tensor& t) override {
    check(t, "allreduce_sum");
    auto w =
        std::make_shared<NcclWork>(this, "nccl allreduce of " + std::to_string(t.numel()) + " elements", t);
    enqueue_after_producer(*w, [&] {
      NCCL_CHECK(ncclAllReduce(t.data_ptr(), t.data_ptr(), t.numel(), nccl_type(t), ncclSum, comm_->get(),
                               stream_.get()));
    });
    return w;
  }

  void broadcast(const at::Tensor& t, int root) override {
    if (t.device().is_cpu()) return host_comm_->broadcast(t, root);
    check(t, "broadcast");
    auto w = std::make_shared<NcclWork>(this, "nccl broadcast", t);
    enqueue_after_producer(*w, [&] {
      NCCL_CHECK(ncclBroadcast(t.data_ptr(), t.data_ptr(), t.numel(), nccl_type(t), root, comm_->get(),
                               stream_.get()));
    });
    w->wait();
  }

  void barrier() override { host_comm_->barrier(); }
  std::vector<double> allreduce_sum(const std::vector<double>& v) override {
    return host_comm_->allreduce_sum(v);
  }
  std::vector<double> allreduce_max(const std::vector<double>& v) override {
    return host_comm_->allreduce_max(v);
  }
  std::vector<double> gather(const std::vector<double>& mine, int root) override {
    return host_comm_->gather(mine, root);
  }
  std::vector<std::string> allgather_strings(const std::string& mine) override {
    return host_comm_->allgather_strings(mine);
  }

  [[noreturn]] void abort(int code, const std::string& why) override {
    if (comm_) comm_->abort();
    host_comm_->abort(code, why);
    std::abort();  // not reached (MPI_Abort ends the job); says so to a compiler that cannot see it
  }

  double timeout_s() const { return opts_.timeout_s; }
  cudaStream_t stream() const { return stream_.get(); }
  ncclResult_t async_error() const { return comm_->async_error(); }

 private:
  void check(const at::Tensor& t, const char* op) {
    if (!t.is_cuda() || !t.is_contiguous())
      throw CommError(std::string("NcclCommunicator::") + op + " needs a contiguous CUDA tensor");
  }

  // The NCCL stream waits for the work queued so far on LibTorch's current stream (the producer
  // of the gradients), then runs `launch` bracketed by timing events.
  template <class F>
  void enqueue_after_producer(NcclWork& w, F&& launch) {
    cudaStream_t producer = at::cuda::getCurrentCUDAStream(device_).stream();
    CudaEvent ready = make_event(false);
    CUDA_CHECK(cudaEventRecord(ready.get(), producer));
    CUDA_CHECK(cudaStreamWaitEvent(stream_.get(), ready.get(), 0));
    CUDA_CHECK(cudaEventRecord(w.start(), stream_.get()));
    launch();
    CUDA_CHECK(cudaEventRecord(w.end(), stream_.get()));
  }

  CommOptions opts_;
  std::unique_ptr<Communicator> host_comm_;
  int device_ = 0;
  CudaStream stream_;
  std::unique_ptr<NcclComm> comm_;
  std::string version_;
};

void NcclWork::wait() {
  if (waited_) return;
  const auto deadline = Clock::now() + std::chrono::duration_cast<Clock::duration>(
                                           std::chrono::duration<double>(owner_->timeout_s()));
  for (;;) {
    cudaError_t q = cudaEventQuery(end_.get());
    if (q == cudaSuccess) break;
    if (q != cudaErrorNotReady) CUDA_CHECK(q);
    ncclResult_t e = owner_->async_error();
#if NCCL_VERSION_CODE >= 21400
    if (e == ncclInProgress) e = ncclSuccess;
#endif
    if (e != ncclSuccess) owner_->abort(kExitFailure, what_ + " failed: " + ncclGetErrorString(e));
    if (Clock::now() > deadline)
      owner_->abort(kExitFailure, "collective '" + what_ + "' did not complete within " +
                                      std::to_string(static_cast<long>(owner_->timeout_s())) +
                                      " s (comm_timeout_s; another rank died, hung or diverged)");
    std::this_thread::yield();
  }
  float ms = 0;
  CUDA_CHECK(cudaEventElapsedTime(&ms, start_.get(), end_.get()));
  seconds_ = ms / 1000.0;
  // Later kernels on LibTorch's stream (optimizer) must see the reduced values.
  CUDA_CHECK(cudaStreamWaitEvent(at::cuda::getCurrentCUDAStream().stream(), end_.get(), 0));
  waited_ = true;
  keep_.reset();
}

}  // namespace

std::unique_ptr<Communicator> make_nccl(const CommOptions& opts) {
  return std::make_unique<NcclCommunicator>(opts);
}

}  // namespace gridrun::runner::comm
