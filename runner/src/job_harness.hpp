// Private to the runner: JobHarness, everything around a job's loop that training (trainer.cpp)
// and inference (inference.cpp) share, so that the two loops are all that differs between them.
//
// Why one object: the set-up has an order that matters (device, then the global seed, data and
// model, then the initial weights every rank must agree on, then the per-rank seed), and the end
// has a rule that must hold on every path: once rank 0 has created the results file, the file is
// ended with a final status. An exception, a loop that returns without finishing, anything that
// unwinds the harness leaves status `failed` with the reason in the file; a file never stays
// `running` because a process ended. Failures before the file exists are recorded by main()
// (train_main.cpp), which writes a results file of its own when there is none.
#pragma once

#include <torch/types.h>

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "gridrun/hw/util_sampler.hpp"
#include "gridrun/results/writer.hpp"
#include "gridrun/runner/communicator.hpp"
#include "gridrun/runner/dataset.hpp"
#include "gridrun/runner/model.hpp"
#include "gridrun/runner/options.hpp"

namespace gridrun::runner {

struct HarnessOptions {
  // Training: GPU settings (cuDNN autotuning, TF32), the GPU memory cap, device-resident data,
  // --init-out, channels_last weights and the per-rank reseed. Inference runs the model as built.
  bool training = true;
  // Inference's `checkpoint` parameter: resolved (resolve_checkpoint) right after the device is
  // chosen, so a missing one is bad input before anything is built; its weights replace rank 0's
  // broadcast initial weights. Empty: random initial weights, identical on every rank.
  std::string checkpoint;
};

// What a loop adds to the results file's root attributes, known only after its own set-up.
struct ResultsStart {
  std::int64_t resume_from_step = 0;  // > 0: rows of earlier steps are kept (see JobWriter)
  std::map<std::string, std::string> str_attrs;
  std::map<std::string, std::int64_t> int_attrs;
};

class JobHarness {
 public:
  // Collective. Checks `ranks` against the process count, installs the stop signals, picks the
  // device, loads the data and builds the model with the job's seed, and makes the initial
  // weights equal on all ranks (checkpoint weights or rank 0's broadcast). Throws BadInput for
  // bad input (exit 2), anything else for a runtime failure.
  JobHarness(const RunnerOptions& opts, Communicator& comm, const HarnessOptions& hopts);
  // Ends an unfinished results file with status `failed` (the reason run() caught, or a generic
  // one) and stops the utilisation sampler. Never throws.
  ~JobHarness();
  JobHarness(const JobHarness&) = delete;
  JobHarness& operator=(const JobHarness&) = delete;

  const RunnerOptions& options() const { return o_; }
  const jobs::JobParams& job() const { return o_.job; }
  Communicator& comm() { return comm_; }
  int rank() const { return rank_; }
  int world() const { return world_; }
  bool lead() const { return rank_ == 0; }
  bool gpu() const { return o_.job.device == jobs::Device::gpu; }
  torch::Device device() const { return dev_; }
  Model& model() { return *model_; }
  // The splits, moved onto the device when training on a GPU and they fit (indexing there).
  std::shared_ptr<const Dataset> train_set_ptr() const { return train_set_; }
  const Dataset& test_set() const { return *test_set_; }
  std::int64_t train_size() const { return data_.train->size(); }
  bool channels_last() const { return channels_last_; }
  // The resolved checkpoint file of HarnessOptions::checkpoint ("" for random weights).
  const std::string& weights_file() const { return weights_file_; }

  // Collective: rank 0 creates the results file (root attributes: parameters, hosts, versions,
  // model size, plus `start`) and starts sampling the utilisation of every rank on its host.
  void open_results(const ResultsStart& start);
  // Rank 0 after open_results; null on the other ranks.
  results::JobWriter* writer() { return writer_.get(); }
  // Name of rank 0's first GPU ("" on CPU), for the MFU peak.
  const std::string& gpu_name() const { return gpu_name_; }

  // Runs the job's loop and returns its exit code. An exception leaving it is kept as the
  // failure reason the destructor records, and rethrown (main turns it into the exit code).
  int run(const std::function<int()>& loop);
  // Collective, once at the end: peak RSS over ranks; rank 0 adds flops_per_sample,
  // model_params, peak_rss_bytes and the MFU (from the loop's flops_per_s) to `summary`, stops
  // the sampler and ends the results file with `status`.
  void finish(results::Status status, const std::string& reason, results::Summary summary);

 private:
  void build_data_and_model();
  void init_weights();

  const RunnerOptions& o_;
  Communicator& comm_;
  const HarnessOptions hopts_;
  const int rank_, world_;
  torch::Device dev_{torch::kCPU};
  std::string weights_file_;
  DataSplits data_;
  std::shared_ptr<Dataset> train_set_, test_set_;
  std::shared_ptr<Model> model_;
  bool channels_last_ = false;
  // The sampler's sink writes into the writer: declared after it, so it is destroyed first.
  std::unique_ptr<results::JobWriter> writer_;
  std::unique_ptr<hw::UtilSampler> util_;
  std::string gpu_name_;
  std::string failure_;
  bool finished_ = false;
};

// Base of the job loops (TrainLoop, InferLoop) and of the StepRecorder the training loop writes
// through: the harness and what each of them reads from it, bound once.
class LoopBase {
 protected:
  explicit LoopBase(JobHarness& h)
      : h_(h),
        o_(h.options()),
        j_(h.job()),
        comm_(h.comm()),
        model_(h.model()),
        dev_(h.device()),
        rank_(h.rank()),
        world_(h.world()),
        lead_(h.lead()) {}

  JobHarness& h_;
  const RunnerOptions& o_;
  const jobs::JobParams& j_;
  Communicator& comm_;
  Model& model_;
  const torch::Device dev_;
  const int rank_, world_;
  const bool lead_;
};

}  // namespace gridrun::runner
