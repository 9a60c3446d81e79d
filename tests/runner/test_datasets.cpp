// Data-set readers on tiny files generated here in the official formats (CIFAR-10 binary, MNIST idx
// raw and gzip, the text TSV), plus truncated and malformed files: each must fail with BadInput
// naming the file and the expected format.
#include <gtest/gtest.h>
#include <torch/torch.h>
#include <zlib.h>

#include <filesystem>
#include <fstream>

#include "data_file_writer.hpp"
#include "gridrun/base/sha256.hpp"
#include "gridrun/runner/dataset.hpp"
#include "gridrun/runner/errors.hpp"

using namespace gridrun::runner;
namespace fs = std::filesystem;

namespace {

class TempDir {
 public:
  TempDir() {
    path_ = fs::temp_directory_path() /
            ("gridrun-ds-" + std::to_string(::getpid()) + "-" + std::to_string(counter()++));
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string str() const { return path_.string(); }
  std::string file(const std::string& f) const { return (path_ / f).string(); }

 private:
  static int& counter() {
    static int c = 0;
    return c;
  }
  fs::path path_;
};

void write(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

std::string cifar_records(int n, int label0) {
  std::string s;
  for (int i = 0; i < n; ++i) {
    s.push_back(static_cast<char>((label0 + i) % 10));
    for (int p = 0; p < 3072; ++p) s.push_back(static_cast<char>((i * 7 + p) & 0xff));
  }
  return s;
}

std::string be32(std::uint32_t v) {
  return {static_cast<char>(v >> 24), static_cast<char>(v >> 16), static_cast<char>(v >> 8),
          static_cast<char>(v)};
}

std::string idx_images(int n) {
  std::string s = be32(0x803) + be32(n) + be32(28) + be32(28);
  for (int i = 0; i < n * 784; ++i) s.push_back(static_cast<char>(i & 0xff));
  return s;
}

std::string idx_labels(int n) {
  std::string s = be32(0x801) + be32(n);
  for (int i = 0; i < n; ++i) s.push_back(static_cast<char>(i % 10));
  return s;
}

void write_gz(const std::string& path, const std::string& bytes) {
  gzFile f = gzopen(path.c_str(), "wb");
  gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size()));
  gzclose(f);
}

// The four IDX files of an (fashion-)MNIST folder; `gz_train`/`gz_test` choose raw or gzip.
DatasetOptions idx_set(const TempDir& d, const std::string& name, int ntrain, int ntest, bool gz_train,
                       bool gz_test) {
  auto put = [&](const std::string& f, const std::string& bytes, bool gz) {
    gz ? write_gz(d.file(f + ".gz"), bytes) : write(d.file(f), bytes);
  };
  put("train-images-idx3-ubyte", idx_images(ntrain), gz_train);
  put("train-labels-idx1-ubyte", idx_labels(ntrain), gz_train);
  put("t10k-images-idx3-ubyte", idx_images(ntest), gz_test);
  put("t10k-labels-idx1-ubyte", idx_labels(ntest), gz_test);
  DatasetOptions o;
  o.name = name;
  o.data_dir = d.str();
  return o;
}

void expect_bad(const DatasetOptions& o, const std::string& needle1, const std::string& needle2) {
  try {
    make_dataset(o);
    FAIL() << "expected BadInput";
  } catch (const BadInput& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(needle1), std::string::npos) << m;
    EXPECT_NE(m.find(needle2), std::string::npos) << m;
  }
}

}  // namespace

TEST(Datasets, SyntheticIsDeterministicAndShaped) {
  DatasetOptions o;
  o.train_samples = 64;
  o.test_samples = 16;
  auto a = make_dataset(o), b = make_dataset(o);
  EXPECT_EQ(a.train->size(), 64);
  EXPECT_EQ(a.test->size(), 16);
  auto ba = a.train->get({0, 5, 63}), bb = b.train->get({0, 5, 63});
  EXPECT_EQ(ba.x.sizes(), (std::vector<std::int64_t>{3, 3, 32, 32}));
  EXPECT_TRUE(ba.x.equal(bb.x));
  EXPECT_TRUE(ba.y.equal(bb.y));
  auto all = a.train->get([] {
    std::vector<std::int64_t> v(64);
    for (int i = 0; i < 64; ++i) v[i] = i;
    return v;
  }());
  EXPECT_GT(std::get<0>(at::_unique(all.y)).numel(), 3);  // several classes present
  DatasetOptions t = o;
  t.tokens = true;
  auto tx = make_dataset(t);
  EXPECT_EQ(tx.input.channels, 0);
  EXPECT_EQ(tx.train->get({1, 2}).x.sizes(), (std::vector<std::int64_t>{2, kSyntheticSeqLen}));
  EXPECT_EQ(make_dataset(DatasetOptions{}).train->size(), 4096);
}

// The documented normalisation: zero mean and std 1/8 per channel (see kSyntheticStd), and the
// classes are balanced enough for accuracy to mean something.
TEST(Datasets, SyntheticNormalisedPerChannel) {
  auto d = make_dataset(DatasetOptions{});
  std::vector<std::int64_t> all(4096);
  for (int i = 0; i < 4096; ++i) all[i] = i;
  auto b = d.train->get(all);
  auto mean = b.x.mean({0, 2, 3}), stdev = b.x.std({0, 2, 3});
  for (int c = 0; c < 3; ++c) {
    EXPECT_NEAR(mean[c].item<double>(), 0.0, 0.03) << c;
    EXPECT_NEAR(stdev[c].item<double>(), 0.125, 0.02) << c;
  }
  auto counts = at::bincount(b.y, {}, 10);
  EXPECT_GT(counts.min().item<std::int64_t>(), 300);
}

TEST(Datasets, Cifar10BinaryReadsAndRejectsTruncated) {
  TempDir d;
  for (int i = 1; i <= 5; ++i) write(d.file("data_batch_" + std::to_string(i) + ".bin"), cifar_records(4, i));
  write(d.file("test_batch.bin"), cifar_records(3, 0));
  DatasetOptions o;
  o.name = "cifar10";
  o.data_dir = d.str();
  auto ds = make_dataset(o);
  EXPECT_EQ(ds.train->size(), 20);
  EXPECT_EQ(ds.test->size(), 3);
  auto b = ds.train->get({0, 4});
  EXPECT_EQ(b.y[0].item<std::int64_t>(), 1);  // first record of data_batch_1
  EXPECT_EQ(b.y[1].item<std::int64_t>(), 2);  // first record of data_batch_2
  EXPECT_EQ(b.x.sizes(), (std::vector<std::int64_t>{2, 3, 32, 32}));
  // pixel (c=0,y=0,x=1) of record 0 is byte 1 -> (1/255 - mean) / std
  EXPECT_NEAR(b.x[0][0][0][1].item<float>(), (1 / 255.0f - kCifar10Mean[0]) / kCifar10Std[0], 1e-5);
  EXPECT_NEAR(kCifar10Mean[0], 0.4914f, 1e-6);  // the published constants, not recomputed
  EXPECT_NEAR(kCifar10Std[2], 0.2616f, 1e-6);
  write(d.file("data_batch_3.bin"), cifar_records(4, 0).substr(0, 3073 * 3 + 100));
  expect_bad(o, "data_batch_3.bin", "3073");
  write(d.file("data_batch_3.bin"), std::string(1, '\x0c') + std::string(3072, 'a'));
  expect_bad(o, "data_batch_3.bin", "label 12");
  fs::remove(d.file("data_batch_3.bin"));
  expect_bad(o, "missing data file", "data_batch_3.bin");
}

TEST(Datasets, MnistIdxRawAndGzip) {
  TempDir d;
  const DatasetOptions o = idx_set(d, "mnist", 6, 4, /*gz_train=*/false, /*gz_test=*/true);
  auto ds = make_dataset(o);
  EXPECT_EQ(ds.train->size(), 6);
  EXPECT_EQ(ds.test->size(), 4);
  EXPECT_EQ(ds.input.channels, 1);
  EXPECT_EQ(ds.input.height, 28);
  auto b = ds.test->get({3});
  EXPECT_EQ(b.y[0].item<std::int64_t>(), 3);
  EXPECT_EQ(b.x.sizes(), (std::vector<std::int64_t>{1, 1, 28, 28}));
  const auto raw = static_cast<unsigned char>(idx_images(4)[16 + 3 * 784]);
  EXPECT_NEAR(b.x[0][0][0][0].item<float>(), (raw / 255.0f - kMnistMean) / kMnistStd, 1e-5);
  write_gz(d.file("t10k-images-idx3-ubyte.gz"), idx_images(4).substr(0, 16 + 784 * 2));
  expect_bad(o, "t10k-images-idx3-ubyte.gz", "truncated");
  write(d.file("train-labels-idx1-ubyte"), be32(0x803) + be32(6));
  expect_bad(o, "train-labels-idx1-ubyte", "magic");
  write(d.file("train-labels-idx1-ubyte"), idx_labels(5));
  expect_bad(o, "6 images", "5 labels");
  fs::remove(d.file("train-labels-idx1-ubyte"));
  expect_bad(o, "missing data file", "train-labels-idx1-ubyte");
}

// fashion-mnist reads the same IDX files with its own constants; every complaint names the Debian
// package, so a user with missing or truncated files learns where good ones come from.
TEST(Datasets, FashionMnistIdxNamesDebianPackage) {
  TempDir d;
  DatasetOptions o = idx_set(d, "fashion-mnist", 6, 4, true, true);
  auto ds = make_dataset(o);
  EXPECT_EQ(ds.train->size(), 6);
  EXPECT_EQ(ds.input.num_classes, 10);
  auto b = ds.train->get({0});
  const auto raw = static_cast<unsigned char>(idx_images(6)[16]);
  EXPECT_NEAR(b.x[0][0][0][0].item<float>(), (raw / 255.0f - kFashionMnistMean) / kFashionMnistStd, 1e-5);
  write_gz(d.file("train-images-idx3-ubyte.gz"), idx_images(6).substr(0, 16 + 784 * 3));
  expect_bad(o, "train-images-idx3-ubyte.gz", "truncated");
  expect_bad(o, "MNIST idx format", "dataset-fashion-mnist");
  write_gz(d.file("train-images-idx3-ubyte.gz"), idx_images(6));
  fs::remove(d.file("t10k-labels-idx1-ubyte.gz"));
  expect_bad(o, "missing data file", "t10k-labels-idx1-ubyte");
  expect_bad(o, "missing data file", "dataset-fashion-mnist");
  // No data_dir: the Debian package's folder (its files when installed, else the install hint).
  o.data_dir.clear();
  try {
    auto real = make_dataset(o);
    EXPECT_EQ(real.train->size(), 60000);
    EXPECT_EQ(real.test->size(), 10000);
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find(kFashionMnistDir), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("install Debian package dataset-fashion-mnist"), std::string::npos)
        << e.what();
  }
}

TEST(Datasets, TextTsvAndTokenizer) {
  auto t = tokenize("  hi \t there ", 6);
  EXPECT_EQ(t, (std::vector<std::int64_t>{'h' + 1, 'i' + 1, ' ' + 1, 't' + 1, 'h' + 1, 'e' + 1}));
  EXPECT_EQ(tokenize("a", 3), (std::vector<std::int64_t>{'a' + 1, 0, 0}));
  TempDir d;
  write(d.file("train.tsv"), "0\tgood movie\n2\tbad\r\n\n1\tokay\n");
  write(d.file("test.tsv"), "1\tfine\n");
  DatasetOptions o;
  o.name = "text";
  o.data_dir = d.str();
  o.tokens = true;
  auto ds = make_dataset(o);
  EXPECT_EQ(ds.train->size(), 3);
  EXPECT_EQ(ds.input.num_classes, 3);
  auto b = ds.train->get({1});
  EXPECT_EQ(b.y[0].item<std::int64_t>(), 2);
  EXPECT_EQ(b.x[0][0].item<std::int64_t>(), 'b' + 1);
  EXPECT_EQ(b.x.size(1), kTextSeqLen);
  write(d.file("test.tsv"), "1\tfine\nno tab here\n");
  expect_bad(o, "test.tsv line 2", "TAB");
  write(d.file("test.tsv"), "x\tfine\n");
  expect_bad(o, "test.tsv line 1", "label");
  o.tokens = false;
  write(d.file("test.tsv"), "1\tfine\n");
  expect_bad(o, "dataset=text", "model=transformer");
}

// dataset=hdf5: a file loaded whole and the same file read per batch (a data set larger than
// memory; resident_max_bytes = 0) give the same batches, normalised by the file's mean and std;
// without /test, the last tenth of /train is the test split.
TEST(Datasets, Hdf5ResidentAndStreamedGiveTheSameBatches) {
  TempDir dir;
  const std::string f = dir.file("d.h5");
  const std::uint64_t n = 50;
  std::vector<std::uint8_t> x(n * 3 * 4 * 4);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<std::uint8_t>((i * 37) % 251);
  std::vector<std::int64_t> y(n);
  for (std::size_t i = 0; i < n; ++i) y[i] = static_cast<std::int64_t>(i % 3);
  {
    gridrun::dataset::testing::DataFileWriter w(f);
    w.u8("/train/x", {n, 3, 4, 4}, x, 7);
    w.i64("/train/y", {n}, y);
    w.attr("mean", std::vector<float>{0.5f, 0.25f, 0.125f});
    w.attr("std", std::vector<float>{0.5f});
  }
  DatasetOptions o;
  o.name = "hdf5";
  o.data_file = f;
  const DataSplits resident = make_dataset(o);
  o.resident_max_bytes = 0;
  const DataSplits streamed = make_dataset(o);
  EXPECT_EQ(resident.input.channels, 3);
  EXPECT_EQ(resident.input.num_classes, 3);
  EXPECT_EQ(resident.train->size(), 45);
  EXPECT_EQ(resident.test->size(), 5);
  EXPECT_GT(resident.train->bytes(), 0);
  EXPECT_EQ(streamed.train->bytes(), 0);  // nothing held: never copied to a GPU whole
  const std::vector<std::int64_t> idx = {44, 3, 3, 0, 17};
  const Batch a = resident.train->get(idx), b = streamed.train->get(idx);
  EXPECT_TRUE(a.x.equal(b.x));
  EXPECT_TRUE(a.y.equal(b.y));
  EXPECT_EQ(a.x.sizes(), (std::vector<std::int64_t>{5, 3, 4, 4}));
  // Sample 17, channel 1, pixel 0: (x / 255 - 0.25) / 0.5.
  const float px = static_cast<float>(x[17 * 48 + 16]);
  EXPECT_FLOAT_EQ(a.x[4][1][0][0].item<float>(), (px / 255.0f - 0.25f) / 0.5f);
  EXPECT_EQ(a.y[0].item<std::int64_t>(), 44 % 3);
  // The held-out test rows are /train's last five.
  const Batch t = streamed.test->get({0, 4});
  EXPECT_EQ(t.y[0].item<std::int64_t>(), 45 % 3);
  EXPECT_EQ(t.y[1].item<std::int64_t>(), 49 % 3);
  EXPECT_TRUE(t.x.equal(resident.test->get({0, 4}).x));
  // A model that takes token ids is told the file holds images, naming the file.
  o.tokens = true;
  try {
    make_dataset(o);
    FAIL() << "no error";
  } catch (const BadInput& e) {
    EXPECT_NE(std::string(e.what()).find(f + ": /train/x holds inputs"), std::string::npos) << e.what();
  }
  // Issue 57: the job's data_sha256 is checked against the file itself, not plan's cache: the file's
  // own hash loads, any other is BadInput naming the file and both hashes' beginnings.
  o.tokens = false;
  o.data_sha256 = gridrun::base::sha256_file(f);
  EXPECT_EQ(make_dataset(o).train->size(), 45);
  o.data_sha256 = std::string(64, '0');
  try {
    make_dataset(o);
    FAIL() << "a data file with another hash was trained on";
  } catch (const BadInput& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(f + " is not the file the job was planned with"), std::string::npos) << what;
    EXPECT_NE(what.find("planned data_sha256 000000000000"), std::string::npos) << what;
    EXPECT_NE(what.find(gridrun::base::sha256_file(f).substr(0, 12)), std::string::npos) << what;
  }
}
