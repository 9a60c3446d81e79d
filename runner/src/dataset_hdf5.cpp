// dataset=hdf5 (issue 33): the user's own data set in one HDF5 file (dataset::DataFile reads and
// checks it; the layout is in dataset/data_file.hpp).
//
// Why two ways to hold it: timing studies must not measure the disk, so a file that fits
// (DatasetOptions::resident_max_bytes) is loaded whole into the same in-memory split the built-in
// sets use, and everything downstream (device-resident copies on a GPU, the loader thread) is
// unchanged. A larger file is read per batch, rows selected with one hyperslab read on the loader
// thread, so that it overlaps the previous step; the sampler, shuffling and augmentation are the
// built-in sets' either way, so both give the same batches.
#include <ATen/ATen.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <memory>

#include "datasets_internal.hpp"
#include "gridrun/base/sha256.hpp"
#include "gridrun/dataset/data_file.hpp"
#include "gridrun/runner/errors.hpp"

namespace gridrun::runner::detail {

namespace {

using dataset::DataFile;
using dataset::DataKind;

std::int64_t default_resident_max() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  const std::int64_t quarter = pages > 0 && page > 0 ? static_cast<std::int64_t>(pages) * page / 4 : 0;
  const std::int64_t cap = std::int64_t{4} << 30;
  return quarter > 0 ? std::min(cap, quarter) : cap;
}

// A part of one split of the file: rows [offset, offset + rows) of group `split`.
struct Part {
  std::string split;
  std::int64_t offset = 0, rows = 0;
};

std::vector<std::int64_t> model_shape(const dataset::DataFileInfo& i, std::int64_t n) {
  if (i.kind == DataKind::Tokens) return {n, i.seq_len};
  return {n, i.channels, i.height, i.width};
}

void check_tokens(const at::Tensor& x, const dataset::DataFileInfo& i) {
  if (x.numel() == 0) return;
  const std::int64_t lo = x.min().item<std::int64_t>(), hi = x.max().item<std::int64_t>();
  if (lo < 0 || hi >= i.vocab)
    throw BadInput("gridrun-train: " + i.path + ": token id " + std::to_string(lo < 0 ? lo : hi) +
                   " is outside [0, vocab=" + std::to_string(i.vocab) + ") (the attribute 'vocab')");
}

// Inputs as the model takes them: uint8 -> float / 255, then (x - mean[c]) / std[c].
at::Tensor normalise(at::Tensor x, const dataset::DataFileInfo& i) {
  if (i.kind == DataKind::Tokens) return x;
  if (i.kind == DataKind::UInt8) x = x.to(at::kFloat).div_(255.0f);
  const auto c = i.channels;
  x.sub_(at::tensor(i.mean).view({1, c, 1, 1})).div_(at::tensor(i.stdev).view({1, c, 1, 1}));
  return x;
}

at::ScalarType stored_type(DataKind k) {
  return k == DataKind::UInt8 ? at::kByte : k == DataKind::Float32 ? at::kFloat : at::kLong;
}

// Read per batch (files larger than resident_max_bytes).
class StreamedSplit final : public Dataset {
 public:
  StreamedSplit(std::shared_ptr<const DataFile> f, Part p) : f_(std::move(f)), p_(std::move(p)) {}
  std::int64_t size() const override { return p_.rows; }
  Batch get(const std::vector<std::int64_t>& idx) const override {
    const auto& i = f_->info();
    const auto n = static_cast<std::int64_t>(idx.size());
    std::vector<std::int64_t> rows(idx.size());
    for (std::size_t k = 0; k < idx.size(); ++k) rows[k] = p_.offset + idx[k];
    at::Tensor x = at::empty(model_shape(i, n), stored_type(i.kind));
    at::Tensor y = at::empty({n}, at::kLong);
    try {
      f_->read_rows(p_.split, rows, x.data_ptr(), y.data_ptr<std::int64_t>());
    } catch (const std::exception& e) {
      throw std::runtime_error(i.path + ": reading rows of /" + p_.split + " failed: " + e.what());
    }
    if (i.kind == DataKind::Tokens) check_tokens(x, i);
    return {normalise(std::move(x), i), std::move(y)};
  }

 private:
  std::shared_ptr<const DataFile> f_;
  Part p_;
};

// The whole part in memory, read in blocks of about 64 MiB.
std::shared_ptr<Dataset> load_part(const DataFile& f, const Part& p) {
  const auto& i = f.info();
  at::Tensor x = at::empty(model_shape(i, p.rows), stored_type(i.kind));
  at::Tensor y = at::empty({p.rows}, at::kLong);
  const std::int64_t row_bytes = std::max<std::int64_t>(i.sample_bytes(), 1);
  const std::int64_t block = std::max<std::int64_t>(1, (std::int64_t{64} << 20) / row_bytes);
  auto* xb = static_cast<char*>(x.data_ptr());
  const std::int64_t xrow =
      x.numel() / std::max<std::int64_t>(p.rows, 1) * static_cast<std::int64_t>(x.element_size());
  for (std::int64_t at = 0; at < p.rows; at += block) {
    const std::int64_t n = std::min(block, p.rows - at);
    f.read_block(p.split, p.offset + at, n, xb + at * xrow, y.data_ptr<std::int64_t>() + at);
  }
  if (i.kind == DataKind::Tokens) {
    check_tokens(x, i);
    return tensor_dataset(std::move(x), std::move(y));
  }
  if (i.kind == DataKind::UInt8) return tensor_dataset(std::move(x), std::move(y), i.mean, i.stdev);
  return tensor_dataset(normalise(std::move(x), i), std::move(y));
}

// What identifies the file's content between two looks: a write, a replacement or a rename over it
// changes one of these.
struct FileIdentity {
  dev_t dev = 0;
  ino_t ino = 0;
  off_t size = 0;
  std::int64_t mtime_ns = 0, ctime_ns = 0;
  bool operator==(const FileIdentity& o) const {
    return dev == o.dev && ino == o.ino && size == o.size && mtime_ns == o.mtime_ns && ctime_ns == o.ctime_ns;
  }
};

FileIdentity identity_of(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return {};
  auto ns = [](const timespec& t) { return static_cast<std::int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec; };
  return {st.st_dev, st.st_ino, st.st_size, ns(st.st_mtim), ns(st.st_ctim)};
}

// The job trains on the data it was planned with (its id holds data_sha256): the file is hashed
// here, not trusted from plan's stat-keyed cache (issue 57: a cache entry with the file's new stat
// and an old hash made `run` call a job completed on different data). The cost is one read of the
// file per rank and job start (docs/own-model.md gives the rate).
void check_planned_hash(const std::string& path, const std::string& planned) {
  const std::string where = "gridrun-train: data_file " + path;
  std::string sha;
  try {
    sha = base::sha256_file(path);
  } catch (const std::exception& e) {
    throw BadInput("gridrun-train: data_file " + std::string(e.what()));
  }
  if (sha != planned)
    throw BadInput(where + " is not the file the job was planned with (sha256 " + sha.substr(0, 12) +
                   "..., planned data_sha256 " + planned.substr(0, 12) +
                   "...): plan the grid again, which gives its jobs new ids");
}

}  // namespace

DataSplits make_hdf5(const DatasetOptions& o) {
  if (o.data_file.empty()) throw BadInput("gridrun-train: dataset=hdf5 needs data_file");
  const FileIdentity hashed = identity_of(o.data_file);
  if (!o.data_sha256.empty()) check_planned_hash(o.data_file, o.data_sha256);
  std::shared_ptr<const DataFile> f;
  try {
    f = std::make_shared<const DataFile>(DataFile::open(o.data_file));
  } catch (const dataset::DataFileError& e) {
    throw BadInput("gridrun-train: data_file " + std::string(e.what()));
  }
  // Replaced or rewritten between the hash and the open: what was opened is not what was hashed.
  if (!o.data_sha256.empty() && !(identity_of(o.data_file) == hashed))
    throw BadInput("gridrun-train: data_file " + o.data_file +
                   " changed while it was hashed and opened; run the job again once it is written");
  const auto& i = f->info();
  // No /test: the last tenth of /train is held out (and never trained on).
  Part train{"train", 0, i.train.rows}, test{"test", 0, i.test.rows};
  if (!i.has_test()) {
    const std::int64_t held = std::max<std::int64_t>(1, i.train.rows / 10);
    if (i.train.rows < 2)
      throw BadInput("gridrun-train: data_file " + i.path + ": /train has " + std::to_string(i.train.rows) +
                     " row and there is no /test (expected /test, or 2 or more rows to hold a tenth out)");
    train.rows = i.train.rows - held;
    test = {"train", train.rows, held};
  }
  if (o.train_samples > 0) train.rows = std::min(train.rows, o.train_samples);
  if (o.test_samples > 0) test.rows = std::min(test.rows, o.test_samples);

  DataSplits d;
  if (i.kind == DataKind::Tokens)
    d.input = InputInfo{0, 0, 0, i.classes, i.vocab, i.seq_len};
  else
    d.input = InputInfo{i.channels, i.height, i.width, i.classes, 257, kTextSeqLen};
  if (!o.tokens_any && o.tokens != (i.kind == DataKind::Tokens))
    throw BadInput("gridrun-train: data_file " + i.path + ": /train/x holds " +
                   (o.tokens
                        ? "inputs, but the model takes token ids (expected int32/int64 [N, L])"
                        : "token ids, but the model takes images (expected float32 or uint8 [N, C, H, W])"));
  const std::int64_t limit = o.resident_max_bytes >= 0 ? o.resident_max_bytes : default_resident_max();
  const std::int64_t bytes = (train.rows + test.rows) * i.sample_bytes();
  if (bytes <= limit) {
    d.train = load_part(*f, train);
    d.test = load_part(*f, test);
  } else {
    d.train = std::make_shared<StreamedSplit>(f, train);
    d.test = std::make_shared<StreamedSplit>(f, test);
  }
  return d;
}

}  // namespace gridrun::runner::detail
