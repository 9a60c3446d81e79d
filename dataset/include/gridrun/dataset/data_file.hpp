// HDF5 data set files (`dataset: hdf5`, `data_file: PATH`; issue 33): the user's own data in one
// file, read with the HDF5 C API gridrun already links. Layout (docs/own-model.md):
//
//   /train/x   [N, C, H, W], [N, H, W] or [N, F], float32 or uint8: images or features, given to
//              the model as float32 [N, C, H, W] ([N, H, W] -> C = 1, [N, F] -> [N, 1, 1, F]);
//              uint8 is scaled by 1/255, then (x - mean[c]) / std[c]
//              or [N, L] int32/int64: token ids (0 = padding), given as int64 [N, L]
//   /train/y   [N] integer labels in [0, classes)
//   /test/x, /test/y   optional, the same sample shape and type (absent: the reader's caller holds
//              out the last tenth of /train)
//   attributes on /: classes (integer; default max label + 1), mean and std (a number or one per
//              channel; default 0 and 1), vocab (integer, required for token ids)
//
// Only the file's own bytes are read (issue 45): external and soft links, virtual data sets and
// external storage are refused, and every data set must store what it declares (contiguous data
// its bytes, chunked data every chunk), so that the content hash in the job id (data_sha256) covers
// all the job reads and a small file cannot declare terabytes of fill values.
//
// Why a folder of its own and not runner/: the planner checks a data file where it can see it
// (gridrun plan, run and submit, which link no LibTorch) with the same code gridrun-train reads it
// with; and not results/, which holds what gridrun writes, not what the user gives it.
// Why rows are read on demand: a data set may be larger than memory; DataFile reads any set of
// rows of a split with one hyperslab selection, and the runner decides what to keep resident.
#pragma once

#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "gridrun/jobs/params.hpp"

namespace gridrun::dataset {

// Bounds on what a data file may declare (docs/own-model.md), each refused at `plan` with the
// value found: rows per split (a row index is an int32 elsewhere), elements per sample (2^26: a
// 3 x 4096 x 4096 image fits), classes (one output of the model's last layer each) and vocab (one
// embedding row each). Labels must also fit int32.
inline constexpr std::int64_t kMaxRows = 2147483647;
inline constexpr std::int64_t kMaxSampleElements = std::int64_t{1} << 26;
inline constexpr std::int64_t kMaxClasses = std::int64_t{1} << 20;
inline constexpr std::int64_t kMaxVocab = std::int64_t{1} << 24;

// A bad data file: what() is "PATH: what is wrong (what was expected)", one line.
class DataFileError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

enum class DataKind { UInt8, Float32, Tokens };

struct DataSplitInfo {
  std::string group;  // "train" or "test"
  std::int64_t rows = 0;
};

struct DataFileInfo {
  std::string path;
  DataKind kind = DataKind::Float32;
  std::vector<std::int64_t> sample_shape;  // x's dimensions after N, as stored
  DataSplitInfo train, test;               // test.rows == 0: the file has no /test
  std::int64_t classes = 0;
  std::int64_t vocab = 0;          // tokens only
  std::vector<float> mean, stdev;  // one per channel (images), empty for tokens
  // What the model sees: images [C, H, W] (tokens: channels = 0, seq_len = L).
  std::int64_t channels = 0, height = 0, width = 0, seq_len = 0;
  bool has_test() const { return test.rows > 0; }
  // Bytes of one sample's x as stored (uint8: 1 per element, float32 4, tokens 8 once read).
  std::int64_t sample_bytes() const;
};

class DataFile {
 public:
  // Opens and checks the whole layout: groups and data sets present as hard links, stored in this
  // file, element types, shapes that agree and within the bounds above, storage that holds every
  // declared value, attributes, every label in range (read once, in blocks). Throws DataFileError.
  static DataFile open(const std::string& path);
  ~DataFile();
  DataFile(DataFile&&) noexcept;
  DataFile& operator=(DataFile&&) noexcept;
  DataFile(const DataFile&) = delete;
  DataFile& operator=(const DataFile&) = delete;

  const DataFileInfo& info() const { return info_; }

  // Rows `rows` (any order, repeats allowed) of split "train" or "test": x into `x_out`, row after
  // row, as uint8 / float / int64 by the kind; labels into `y_out` (int64), either may be null.
  // Thread-safe (HDF5's own lock; one DataFile may be read from the loader thread).
  void read_rows(const std::string& split, const std::vector<std::int64_t>& rows, void* x_out,
                 std::int64_t* y_out) const;
  // Rows [first, first + n) of a split, the same way (the whole-file load reads in such blocks).
  void read_block(const std::string& split, std::int64_t first, std::int64_t n, void* x_out,
                  std::int64_t* y_out) const;

 private:
  struct Impl;
  DataFile() = default;
  std::unique_ptr<Impl> impl_;
  DataFileInfo info_;
};

// DataFile::open's check as a message: "" when the file is usable, else DataFileError's text.
// `tokens`: 1 = the model takes token ids, 0 = images, -1 = either (torchscript).
std::string check_data_file(const std::string& path, int tokens);

// The planner's check of a job's data file (jobs::LoadOptions::check_data_file): check_data_file
// for the job's model, run in a forked copy (base::run_isolated), so that a file that crashes
// libhdf5 fails the plan with a message naming it instead of taking gridrun down.
std::string check_job_data_file(const jobs::JobParams& job);

}  // namespace gridrun::dataset
