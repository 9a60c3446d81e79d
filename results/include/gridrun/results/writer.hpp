// The per-job HDF5 results file: crash-safe, readable while written, self-describing.
//
// Why this shape: one 1-D chunked dataset per metric column (reads well from h5py/pandas), all
// columns extended together, and a committed-rows counter attribute-free (a dataset `/steps/rows`)
// written last, so a reader of a killed job's `.partial` file trusts only complete rows. With HDF5
// 1.10 SWMR, every object must exist before H5Fstart_swmr_write, so the writer creates the whole
// layout up front (it knows the number of ranks and GPUs from JobFileInfo) and, at finish(),
// closes the SWMR file, reopens it normally to set the final status and `/summary`, and renames
// `<id>.h5.partial` to `<id>.h5`.
//
// Only rank 0 writes; other ranks send their per-step figures over the runner's communicator.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace gridrun::results {

inline constexpr int kSchemaVersion = 1;

// Everything known at job start; written as root attributes before SWMR starts.
struct JobFileInfo {
  std::string id;
  std::string run;
  std::string params_json;                       // canonical JSON of the job parameters
  std::map<std::string, std::string> str_attrs;  // typed copies of parameters and facts,
  std::map<std::string, std::int64_t> int_attrs; //   one attribute each (e.g. "param.lr" -> 0.1,
  std::map<std::string, double> float_attrs;     //   "hostnames", "cpu_model", "torch_version")
  int ranks = 1;
  int gpus = 0;                                  // devices sampled in /util (0 for cpu jobs)
  std::string gpu_absent_reason;                 // why GPU columns are absent (e.g. "NVML not found")
  std::int64_t resume_from_step = 0;             // > 0 when the job resumed: rows continue
};

struct StepRow {
  std::int64_t step = 0, epoch = 0;
  double wall_s = 0, loss = 0, samples_per_s = 0, step_s = 0, data_s = 0, forward_s = 0,
         backward_s = 0, optimizer_s = 0, comm_s = 0, exposed_comm_s = 0;
  std::vector<double> rank_step_s;  // size == ranks
};

struct EpochRow {
  std::int64_t epoch = 0;
  double train_loss = 0, train_acc = 0, test_loss = 0, test_acc = 0, epoch_s = 0, wall_s = 0;
};

struct UtilRow {
  double time_s = 0;
  std::vector<double> rank_cpu_pct;       // size == ranks (NaN where unknown)
  std::vector<double> rank_rss_bytes;     // size == ranks
  double node_cpu_pct = 0;
  // size == gpus each (NaN where a counter is unsupported)
  std::vector<double> gpu_util_pct, gpu_mem_bytes, gpu_power_w, gpu_energy_j, gpu_temp_c, gpu_sm_mhz;
};

// Final figures; names become fields of the one-row /summary datasets.
using Summary = std::map<std::string, double>;

enum class Status { Running, Completed, Failed, Interrupted, TargetReached };
std::string to_string(Status s);

class JobWriter {
 public:
  // Creates `<dir>/<id>.h5.partial` (replacing a stale one unless info.resume_from_step > 0, in
  // which case existing rows are kept and new rows continue after them).
  static std::unique_ptr<JobWriter> create(const std::string& dir, const JobFileInfo& info);
  virtual ~JobWriter() = default;

  virtual void append_step(const StepRow& row) = 0;   // buffered; cheap (< 10 us)
  virtual void append_epoch(const EpochRow& row) = 0;
  virtual void append_util(const UtilRow& row) = 0;   // thread-safe w.r.t. append_step
  // Writes buffered rows and flushes the file; called at epoch ends and by a timer (>= every 30 s).
  virtual void flush() = 0;
  // Ends the file: final status, exit reason, end time, summary; renames to `<id>.h5`.
  virtual void finish(Status status, const std::string& exit_reason, const Summary& summary) = 0;
  virtual std::string path() const = 0;
};

}  // namespace gridrun::results
