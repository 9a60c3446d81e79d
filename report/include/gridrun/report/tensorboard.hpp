// A run as TensorBoard logs: `gridrun export RUN --format tensorboard --out DIR` (issue 49 point 6).
//
// Why: TensorBoard is where many people look at training curves, and W&B, MLflow and others import
// its logs. One TensorBoard run per job (a subfolder of DIR named by the job id and the parameters
// that vary), holding the job's /steps and /epochs columns, per-epoch utilization means and the
// /summary figures as scalars, and its parameters for the hparams plugin (a session_start_info and
// a session_end_info); DIR itself holds the hparams experiment: the parameters that vary and the
// metrics, so `tensorboard --logdir DIR` shows the grid as a table. docs/results.md, "TensorBoard".
//
// The bytes are protobuf messages (report/vendor/tensorboard/: TensorFlow's and TensorBoard's own
// message definitions, encoded by libprotobuf) framed as TFRecords (length, masked CRC-32C, payload,
// masked CRC-32C: base/crc32c.hpp). Each event file is made in memory and written atomically
// (base::write_file_atomic), so TensorBoard never sees half an export; an earlier export's event
// files in the same run folder are removed after the new one is in place.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "gridrun/report/run_model.hpp"

namespace gridrun::report {

struct TensorboardOptions {
  std::string out_dir;  // DIR; created when missing (its parent must exist)
  double now = 0;       // wall clock of the export (file names, the experiment); 0: now
  std::string host;     // for file names; "": this host's name
  bool quiet = false;   // no summary line on `log`
};

struct TensorboardExport {
  std::vector<std::string> runs;  // run folders written, relative to out_dir, in job order
  std::size_t events = 0;         // events written, all files together
};

// Writes one run folder per job of `run` that has a readable file (run.data, loaded at Depth::Full)
// and the experiment summary in out_dir. Throws std::runtime_error naming the file on a write
// error. Jobs without a readable file were named by load_run and are skipped.
TensorboardExport write_tensorboard(const LoadedRun& run, const TensorboardOptions& opts, std::ostream& log);

// The event file name TensorBoard expects: events.out.tfevents.<unix time>.<host>.<pid>.<n>.
std::string tensorboard_file_name(double now, const std::string& host, long pid, int n);

// One TFRecord (little-endian uint64 length, its masked CRC-32C, the bytes, their masked CRC-32C).
std::string tfrecord(const std::string& payload);

}  // namespace gridrun::report
