// Data sets, chosen by name. A Dataset is an in-memory split that returns ready-to-use batches for
// given sample indices; readers validate files fully at load, so a bad file fails the job at start
// (BadInput, exit 2) naming the file and the expected format, never in the middle of an epoch.
//
//   synthetic  images 3x32x32 (or token ids for text models), 10 classes: a Gaussian mixture with a
//              fixed prototype per class (images), a fixed random teacher (tokens); generated in
//              memory from a fixed data seed (same data for every job)
//   cifar10    official binary version: data_batch_1..5.bin, test_batch.bin (1 label + 3072 bytes)
//   mnist      idx files train-images-idx3-ubyte, train-labels-idx1-ubyte, t10k-* (raw or .gz)
//   text       train.tsv, test.tsv: one `label<TAB>text` per line; byte tokenizer (docs/runner.md)
//   hdf5       the user's own set: one HDF5 file, layout in dataset/data_file.hpp (docs/own-model.md);
//              loaded whole up to DatasetOptions::resident_max_bytes, else read by rows per batch
#pragma once

#include <ATen/core/Tensor.h>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace gridrun::runner {

struct Batch {
  at::Tensor x;  // float [N, C, H, W] (normalised) or int64 [N, seq_len]
  at::Tensor y;  // int64 [N]
};

class Dataset {
 public:
  virtual ~Dataset() = default;
  virtual std::int64_t size() const = 0;
  virtual Batch get(const std::vector<std::int64_t>& indices) const = 0;
  // The same split held on `device` (images stay uint8 there and are normalised per batch on the
  // device), or nullptr when the implementation cannot. Why: on a GPU, indexing a resident copy
  // costs one small index upload per step instead of a host gather, a normalisation on the host and
  // a copy from unpinned memory, which together kept the GPU idle for most of a small model's step.
  virtual std::shared_ptr<Dataset> on_device(const at::Device& device) const {
    (void)device;
    return nullptr;
  }
  // Bytes the split occupies (what on_device would allocate).
  virtual std::int64_t bytes() const { return 0; }
};

// What the model needs to know about the input (mirrors ModelSpec's fields).
struct InputInfo {
  std::int64_t channels = 3, height = 32, width = 32;  // channels = 0 for token inputs
  std::int64_t num_classes = 10;
  std::int64_t vocab = 257, seq_len = 128;
};

struct DataSplits {
  std::shared_ptr<Dataset> train, test;
  InputInfo input;
};

struct DatasetOptions {
  std::string name = "synthetic";
  std::string data_dir;
  std::int64_t train_samples = 0;  // 0 = whole split (synthetic: 4096)
  std::int64_t test_samples = 0;   // 0 = whole split (synthetic: 1024)
  bool tokens = false;             // the model takes token ids (synthetic then makes text)
  // synthetic images only: side in pixels, 8, 16 or 32 (a 4x4 latent upsampled by side / 4). 32
  // is what a job trains on; tests/runner/test_learns.cpp teaches the deepest nets on 16 to keep
  // the suite's CPU time in bounds (a quarter of the pixels, a quarter of the work).
  std::int64_t synthetic_side = 32;
  // hdf5: the file, and the most bytes of inputs held in memory (-1: 4 GiB or a quarter of the
  // physical memory, whichever is less); a larger file is read per batch (a data set larger than
  // memory trains; tests set 0 to exercise that path).
  std::string data_file;
  std::int64_t resident_max_bytes = -1;
  // hdf5: the SHA-256 the planner gave the file (the job's data_sha256, part of its id); the file is
  // hashed again before it is read and a mismatch is BadInput ("" = not checked: plan's own model
  // check, which hashed it just before). Issue 57: plan's hash cache can be made to lie.
  std::string data_sha256;
  // The model takes either (torchscript): the data decides, `tokens` only picks synthetic's kind.
  bool tokens_any = false;
};

// Throws BadInput for an unknown name or a missing/malformed file.
DataSplits make_dataset(const DatasetOptions& o);
const std::vector<std::string>& dataset_names();

// The text format's tokenizer (exposed for tests): whitespace runs collapse to one space, each
// byte b becomes token b + 1, 0 pads; truncated/padded to seq_len.
std::vector<std::int64_t> tokenize(const std::string& text, std::int64_t seq_len);

inline constexpr std::int64_t kTextSeqLen = 128;
inline constexpr std::int64_t kSyntheticSeqLen = 64;
inline constexpr std::uint64_t kSyntheticDataSeed = 20240601;
// fashion-mnist: default folder (Debian 12 package dataset-fashion-mnist) and the mean/std of its
// 60,000 training pixels scaled to [0,1] (computed from the package's train-images file).
inline constexpr const char* kFashionMnistDir = "/usr/share/datasets/fashion-mnist";
inline constexpr float kFashionMnistMean = 0.2860f;
inline constexpr float kFashionMnistStd = 0.3530f;
// Per-channel normalisation (x / 255 - mean) / std of the uint8 image sets: CIFAR-10's R, G, B
// statistics of its 50,000 training images and MNIST's, both the values used throughout the
// literature (torchvision examples), so published recipes carry over.
inline constexpr float kCifar10Mean[3] = {0.4914f, 0.4822f, 0.4465f};
inline constexpr float kCifar10Std[3] = {0.2470f, 0.2435f, 0.2616f};
inline constexpr float kMnistMean = 0.1307f;
inline constexpr float kMnistStd = 0.3081f;
// synthetic images (see make_dataset): a pixel is prototype N(0,1) + sigma x N(0,1) + 0.2 x N(0,1),
// mean 0 and std sqrt(1 + sigma^2 + 0.04) (= 1.8138) in every channel; it is divided by 8 x that std,
// i.e. normalised to zero mean and std 1/8, so that a sample's squared norm is ~48 (its latent
// dimension) instead of 3072; docs/runner.md says why.
inline constexpr float kSyntheticLatentSigma = 1.5f;
inline constexpr float kSyntheticMean = 0.0f;
inline constexpr float kSyntheticStd = 8.0f * 1.8138f;

}  // namespace gridrun::runner
