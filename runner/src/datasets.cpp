// Data set readers and the synthetic generator (see dataset.hpp for the formats).
//
// Why everything is loaded into memory: the supported sets are small (CIFAR-10 is 180 MB as uint8)
// and timing studies must not measure disk. Images stay uint8 and are normalised per batch.
#include "gridrun/runner/dataset.hpp"

#include <ATen/ATen.h>
#include <zlib.h>

#include <cctype>
#include <cstring>
#include <fstream>
#include <sstream>

#include "datasets_internal.hpp"
#include "gridrun/runner/errors.hpp"

namespace gridrun::runner {

namespace {

// In-memory split: inputs [N, ...] (uint8 images, float images or int64 tokens), labels int64 [N].
class TensorDataset final : public Dataset {
 public:
  TensorDataset(at::Tensor x, at::Tensor y, const std::vector<float>& mean = {},
                const std::vector<float>& stdev = {})
      : x_(std::move(x)), y_(std::move(y)) {
    if (!mean.empty()) {
      const auto c = static_cast<std::int64_t>(mean.size());
      mean_ = at::tensor(mean).view({1, c, 1, 1});
      std_ = at::tensor(stdev).view({1, c, 1, 1});
    }
  }
  std::int64_t size() const override { return x_.size(0); }
  std::int64_t bytes() const override { return static_cast<std::int64_t>(x_.nbytes() + y_.nbytes()); }
  std::shared_ptr<Dataset> on_device(const at::Device& device) const override {
    auto d = std::make_shared<TensorDataset>(x_.to(device), y_.to(device));
    if (mean_.defined()) {
      d->mean_ = mean_.to(device);
      d->std_ = std_.to(device);
    }
    return d;
  }
  Batch get(const std::vector<std::int64_t>& idx) const override {
    const auto n = static_cast<std::int64_t>(idx.size());
    at::Tensor index;
    if (x_.is_cpu()) {
      index = at::from_blob(const_cast<std::int64_t*>(idx.data()), {n}, at::kLong);
    } else {
      // Pinned staging so the upload is asynchronous; the caching host allocator keeps the block
      // until the copy has run, so the next step cannot overwrite it early.
      auto staged = at::empty({n}, at::TensorOptions().dtype(at::kLong).pinned_memory(true));
      std::memcpy(staged.data_ptr(), idx.data(), static_cast<std::size_t>(n) * sizeof(std::int64_t));
      index = staged.to(x_.device(), /*non_blocking=*/true);
    }
    Batch b{x_.index_select(0, index), y_.index_select(0, index)};
    if (b.x.scalar_type() == at::kByte) {
      b.x = b.x.to(at::kFloat).div_(255.0f);
      if (mean_.defined()) b.x.sub_(mean_).div_(std_);
    }
    return b;
  }

 private:
  at::Tensor x_, y_, mean_, std_;
};

std::shared_ptr<Dataset> limit(at::Tensor x, at::Tensor y, std::int64_t n,
                               const std::vector<float>& mean = {}, const std::vector<float>& stdev = {}) {
  if (n > 0 && n < x.size(0)) {
    x = x.narrow(0, 0, n).clone();
    y = y.narrow(0, 0, n).clone();
  }
  return std::make_shared<TensorDataset>(std::move(x), std::move(y), mean, stdev);
}

std::string join(const std::string& dir, const std::string& f) {
  return dir.empty() || dir.back() == '/' ? dir + f : dir + "/" + f;
}

bool exists(const std::string& path) { return std::ifstream(path).good(); }

std::string read_file(const std::string& path, const std::string& format) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw BadInput("gridrun-train: missing data file " + path + " (expected " + format + ")");
  std::ostringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// --- synthetic -----------------------------------------------------------------------------------

// Images: a Gaussian mixture in a 3x4x4 latent space (one fixed random prototype per class, the
// sample's latent = prototype + kSyntheticLatentSigma x N(0, 1), sigma 1.5), upsampled (nearest) to 3x32x32
// plus N(0, 0.2^2) pixel noise, then normalised with kSyntheticMean/kSyntheticStd. Why a mixture and not an
// arg-max teacher: its classes have a margin (the best classifier is still linear in the input), so SGD at
// the default lr 0.1 / momentum 0.9 / batch 32 is not drowned by labels that flip at every boundary. Why the
// pixel scale 1/8: every latent value fills 8x8 pixels, so at unit pixel variance a sample's squared norm is
// 3072 and the first layer's step at lr 0.1 is 64x what it is on the 48 latent values; mlp and lenet then
// diverge or stall at ln 10 (measured). At std 1/8 the squared norm is the latent dimension. A side other
// than 32 (DatasetOptions::synthetic_side) upsamples by side / 4 and scales the std by the same factor / 8,
// which keeps a sample's squared norm at the latent dimension; at 32 the arithmetic is exactly the original
// (the factor is a power of two).
at::Tensor synthetic_images(std::int64_t n, std::int64_t classes, std::int64_t side, at::Tensor& y,
                            at::Generator& gen) {
  const std::int64_t f = side / 4;
  auto proto = at::randn({classes, 3, 4, 4}, gen);
  y = at::randint(0, classes, {n}, gen, at::TensorOptions().dtype(at::kLong));
  auto z = proto.index_select(0, y) + kSyntheticLatentSigma * at::randn({n, 3, 4, 4}, gen);
  auto x = z.repeat_interleave(f, 2).repeat_interleave(f, 3) + 0.2 * at::randn({n, 3, side, side}, gen);
  return x.sub_(kSyntheticMean).div_(kSyntheticStd / 8.0f * static_cast<float>(f));
}

DataSplits make_synthetic(const DatasetOptions& o) {
  const std::int64_t ntrain = o.train_samples > 0 ? o.train_samples : 4096;
  const std::int64_t ntest = o.test_samples > 0 ? o.test_samples : 1024;
  const std::int64_t n = ntrain + ntest, classes = 10;
  auto gen = at::make_generator<at::CPUGeneratorImpl>(kSyntheticDataSeed);
  DataSplits d;
  at::Tensor x, y;
  if (!o.tokens) {
    const std::int64_t side = o.synthetic_side;
    if (side != 8 && side != 16 && side != 32)
      throw BadInput("synthetic_side must be 8, 16 or 32, not " + std::to_string(side));
    x = synthetic_images(n, classes, side, y, gen);
    d.input = InputInfo{3, side, side, classes, 257, kSyntheticSeqLen};
  } else {
    // Token sequences: class c owns 16 tokens (slices of a fixed random permutation of 1..256);
    // each position holds one of the own tokens with probability 1/8, else a token uniform in
    // 1..256. The class is then readable from token counts (a bag of tokens that mean pooling
    // learns), with a margin, as for the images.
    const std::int64_t vocab = 257, L = kSyntheticSeqLen, own = 16;
    auto perm = at::randperm(vocab - 1, gen, at::TensorOptions().dtype(at::kLong)).add_(1);
    y = at::randint(0, classes, {n}, gen, at::TensorOptions().dtype(at::kLong));
    auto slot = at::randint(0, own, {n, L}, gen, at::TensorOptions().dtype(at::kLong));
    auto mine = perm.index_select(0, (y.unsqueeze(1) * own + slot).flatten()).view({n, L});
    auto uniform = at::randint(1, vocab, {n, L}, gen, at::TensorOptions().dtype(at::kLong));
    x = at::where(at::rand({n, L}, gen) < 0.125, mine, uniform);
    d.input = InputInfo{0, 0, 0, classes, vocab, L};
  }
  d.train = std::make_shared<TensorDataset>(x.narrow(0, 0, ntrain).clone(), y.narrow(0, 0, ntrain).clone());
  d.test =
      std::make_shared<TensorDataset>(x.narrow(0, ntrain, ntest).clone(), y.narrow(0, ntrain, ntest).clone());
  return d;
}

// --- cifar10 -------------------------------------------------------------------------------------

const char* kCifarFormat =
    "the CIFAR-10 binary version: records of 1 label byte (0-9) + 3072 pixel bytes (3x32x32, "
    "channel-major), files data_batch_1..5.bin and test_batch.bin";

void read_cifar_file(const std::string& path, std::vector<std::uint8_t>& px,
                     std::vector<std::int64_t>& labels) {
  const std::string raw = read_file(path, kCifarFormat);
  constexpr std::size_t rec = 3073;
  if (raw.empty() || raw.size() % rec != 0)
    throw BadInput("gridrun-train: malformed data file " + path + ": " + std::to_string(raw.size()) +
                   " bytes is not a positive multiple of 3073 (truncated?); expected " + kCifarFormat);
  const std::size_t n = raw.size() / rec;
  const auto* p = reinterpret_cast<const std::uint8_t*>(raw.data());
  for (std::size_t i = 0; i < n; ++i) {
    const std::uint8_t label = p[i * rec];
    if (label > 9)
      throw BadInput("gridrun-train: malformed data file " + path + ": record " + std::to_string(i) +
                     " has label " + std::to_string(label) + " (expected 0-9); expected " + kCifarFormat);
    labels.push_back(label);
    px.insert(px.end(), p + i * rec + 1, p + (i + 1) * rec);
  }
}

std::pair<at::Tensor, at::Tensor> to_tensors(std::vector<std::uint8_t>& px, std::vector<std::int64_t>& labels,
                                             std::int64_t c, std::int64_t h, std::int64_t w) {
  const auto n = static_cast<std::int64_t>(labels.size());
  auto x = at::from_blob(px.data(), {n, c, h, w}, at::kByte).clone();
  auto y = at::from_blob(labels.data(), {n}, at::kLong).clone();
  return {x, y};
}

DataSplits make_cifar10(const DatasetOptions& o) {
  std::vector<std::uint8_t> px;
  std::vector<std::int64_t> labels;
  for (int i = 1; i <= 5; ++i)
    read_cifar_file(join(o.data_dir, "data_batch_" + std::to_string(i) + ".bin"), px, labels);
  auto [xt, yt] = to_tensors(px, labels, 3, 32, 32);
  px.clear();
  labels.clear();
  read_cifar_file(join(o.data_dir, "test_batch.bin"), px, labels);
  auto [xs, ys] = to_tensors(px, labels, 3, 32, 32);
  const std::vector<float> mean(kCifar10Mean, kCifar10Mean + 3), stdev(kCifar10Std, kCifar10Std + 3);
  DataSplits d;
  d.train = limit(xt, yt, o.train_samples, mean, stdev);
  d.test = limit(xs, ys, o.test_samples, mean, stdev);
  d.input = InputInfo{3, 32, 32, 10, 257, kTextSeqLen};
  return d;
}

// --- mnist ---------------------------------------------------------------------------------------

const char* kMnistFormat =
    "MNIST idx format (raw or .gz): images magic 0x00000803 + count, rows, cols (big-endian "
    "uint32) + bytes; labels magic 0x00000801 + count + bytes (0-9)";

// RAII gzFile; zlib reads uncompressed files transparently, so one path handles raw and .gz.
class GzFile {
 public:
  explicit GzFile(const std::string& path) : f_(gzopen(path.c_str(), "rb")) {}
  ~GzFile() {
    if (f_) gzclose(f_);
  }
  GzFile(const GzFile&) = delete;
  GzFile& operator=(const GzFile&) = delete;
  explicit operator bool() const { return f_ != nullptr; }
  std::size_t read(void* buf, std::size_t n) {
    std::size_t got = 0;
    while (got < n) {
      const unsigned chunk = static_cast<unsigned>(std::min<std::size_t>(n - got, 1u << 30));
      const int r = gzread(f_, static_cast<char*>(buf) + got, chunk);
      if (r <= 0) break;
      got += static_cast<std::size_t>(r);
    }
    return got;
  }

 private:
  gzFile f_;
};

// `hint` ends every complaint about a file (for fashion-mnist: which Debian package provides it), so
// the one stderr line tells a user both what is wrong and how to get good files.
std::string find_idx(const std::string& dir, const std::string& base, const std::string& hint) {
  for (const std::string& cand : {join(dir, base), join(dir, base + ".gz")})
    if (exists(cand)) return cand;
  throw BadInput("gridrun-train: missing data file " + join(dir, base) + "[.gz] (expected " + kMnistFormat +
                 ")" + hint);
}

std::vector<std::uint32_t> idx_header(GzFile& f, const std::string& path, std::uint32_t magic, int ndims,
                                      const std::string& hint) {
  std::vector<std::uint8_t> raw(4 * (1 + static_cast<std::size_t>(ndims)));
  if (f.read(raw.data(), raw.size()) != raw.size())
    throw BadInput("gridrun-train: malformed data file " + path + ": header truncated; expected " +
                   kMnistFormat + hint);
  std::vector<std::uint32_t> v(1 + static_cast<std::size_t>(ndims));
  for (std::size_t i = 0; i <= static_cast<std::size_t>(ndims); ++i)
    v[i] = (std::uint32_t{raw[4 * i]} << 24) | (std::uint32_t{raw[4 * i + 1]} << 16) |
           (std::uint32_t{raw[4 * i + 2]} << 8) | std::uint32_t{raw[4 * i + 3]};
  if (v[0] != magic) {
    std::ostringstream m;
    m << "gridrun-train: malformed data file " << path << ": magic 0x" << std::hex << v[0] << " (expected 0x"
      << magic << std::dec << "); expected " << kMnistFormat << hint;
    throw BadInput(m.str());
  }
  return v;
}

std::pair<at::Tensor, at::Tensor> read_mnist_pair(const std::string& dir, const std::string& img,
                                                  const std::string& lab, std::int64_t& rows,
                                                  std::int64_t& cols, const std::string& hint) {
  const std::string ip = find_idx(dir, img, hint), lp = find_idx(dir, lab, hint);
  GzFile fi(ip), fl(lp);
  if (!fi || !fl) throw BadInput("gridrun-train: cannot open " + (fi ? lp : ip));
  auto hi = idx_header(fi, ip, 0x803, 3, hint);
  auto hl = idx_header(fl, lp, 0x801, 1, hint);
  if (hi[1] != hl[1])
    throw BadInput("gridrun-train: malformed MNIST pair: " + ip + " has " + std::to_string(hi[1]) +
                   " images but " + lp + " has " + std::to_string(hl[1]) + " labels" + hint);
  const std::int64_t n = hi[1];
  rows = hi[2];
  cols = hi[3];
  auto x = at::empty({n, 1, rows, cols}, at::kByte);
  const std::size_t want = static_cast<std::size_t>(n * rows * cols);
  if (fi.read(x.data_ptr(), want) != want)
    throw BadInput("gridrun-train: malformed data file " + ip + ": fewer pixel bytes than the " +
                   "header's " + std::to_string(n) + "x" + std::to_string(rows) + "x" + std::to_string(cols) +
                   " (truncated?); expected " + kMnistFormat + hint);
  std::vector<std::uint8_t> lb(static_cast<std::size_t>(n));
  if (fl.read(lb.data(), lb.size()) != lb.size())
    throw BadInput("gridrun-train: malformed data file " + lp + ": fewer label bytes than the " +
                   "header's count " + std::to_string(n) + " (truncated?); expected " + kMnistFormat + hint);
  auto y = at::empty({n}, at::kLong);
  auto* yp = y.data_ptr<std::int64_t>();
  for (std::int64_t i = 0; i < n; ++i) {
    if (lb[i] > 9)
      throw BadInput("gridrun-train: malformed data file " + lp + ": label " + std::to_string(lb[i]) +
                     " at item " + std::to_string(i) + " (expected 0-9)" + hint);
    yp[i] = lb[i];
  }
  return {x, y};
}

// MNIST and Fashion-MNIST share the IDX layout; they differ in the default folder, the
// normalisation constants and the hint that ends an error line.
DataSplits make_idx(const DatasetOptions& o, const std::string& dir, float mean, float stdev,
                    const std::string& hint) {
  std::int64_t r1, c1, r2, c2;
  auto [xt, yt] = read_mnist_pair(dir, "train-images-idx3-ubyte", "train-labels-idx1-ubyte", r1, c1, hint);
  auto [xs, ys] = read_mnist_pair(dir, "t10k-images-idx3-ubyte", "t10k-labels-idx1-ubyte", r2, c2, hint);
  if (r1 != r2 || c1 != c2)
    throw BadInput("gridrun-train: " + o.name + " train images are " + std::to_string(r1) + "x" +
                   std::to_string(c1) + " but test images " + std::to_string(r2) + "x" + std::to_string(c2) +
                   " in " + dir + hint);
  DataSplits d;
  d.train = limit(xt, yt, o.train_samples, {mean}, {stdev});
  d.test = limit(xs, ys, o.test_samples, {mean}, {stdev});
  d.input = InputInfo{1, r1, c1, 10, 257, kTextSeqLen};
  return d;
}

DataSplits make_mnist(const DatasetOptions& o) { return make_idx(o, o.data_dir, kMnistMean, kMnistStd, ""); }

// Debian 12's dataset-fashion-mnist installs the four .gz files here, so a job needs no data_dir.
// Mean/std are those of the 60,000 training images (pixels scaled to [0,1]).
DataSplits make_fashion_mnist(const DatasetOptions& o) {
  const std::string dir = o.data_dir.empty() ? kFashionMnistDir : o.data_dir;
  return make_idx(o, dir, kFashionMnistMean, kFashionMnistStd,
                  o.data_dir.empty() ? "; install Debian package dataset-fashion-mnist"
                                     : "; Debian package dataset-fashion-mnist installs them in " +
                                           std::string(kFashionMnistDir));
}

// --- text ----------------------------------------------------------------------------------------

const char* kTextFormat =
    "UTF-8/bytes text, one sample per line: `<label><TAB><text>`, label an integer 0..999; "
    "empty lines are ignored";

std::pair<at::Tensor, at::Tensor> read_text(const std::string& path, std::int64_t& max_label) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw BadInput("gridrun-train: missing data file " + path + " (expected " + kTextFormat + ")");
  std::vector<std::int64_t> tokens, labels;
  std::string line;
  std::int64_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    const auto tab = line.find('\t');
    auto bad = [&](const std::string& why) {
      throw BadInput("gridrun-train: malformed data file " + path + " line " + std::to_string(lineno) + ": " +
                     why + " (expected " + kTextFormat + ")");
    };
    if (tab == std::string::npos) bad("no TAB between label and text");
    const std::string lab = line.substr(0, tab);
    if (lab.empty() || lab.size() > 3 ||
        !std::all_of(lab.begin(), lab.end(), [](unsigned char c) { return std::isdigit(c); }))
      bad("label '" + lab + "' is not an integer 0..999");
    const std::int64_t l = std::stoll(lab);
    max_label = std::max(max_label, l);
    labels.push_back(l);
    auto t = tokenize(line.substr(tab + 1), kTextSeqLen);
    tokens.insert(tokens.end(), t.begin(), t.end());
  }
  if (labels.empty())
    throw BadInput("gridrun-train: data file " + path + " has no samples (expected " + kTextFormat + ")");
  const auto n = static_cast<std::int64_t>(labels.size());
  return {at::from_blob(tokens.data(), {n, kTextSeqLen}, at::kLong).clone(),
          at::from_blob(labels.data(), {n}, at::kLong).clone()};
}

DataSplits make_text(const DatasetOptions& o) {
  std::int64_t max_label = 1;
  auto [xt, yt] = read_text(join(o.data_dir, "train.tsv"), max_label);
  auto [xs, ys] = read_text(join(o.data_dir, "test.tsv"), max_label);
  DataSplits d;
  d.train = limit(xt, yt, o.train_samples);
  d.test = limit(xs, ys, o.test_samples);
  d.input = InputInfo{0, 0, 0, max_label + 1, 257, kTextSeqLen};
  return d;
}

}  // namespace

std::vector<std::int64_t> tokenize(const std::string& text, std::int64_t seq_len) {
  std::vector<std::int64_t> out;
  out.reserve(seq_len);
  bool pending_space = false;
  for (unsigned char c : text) {
    if (static_cast<std::int64_t>(out.size()) >= seq_len) break;
    if (std::isspace(c)) {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space && static_cast<std::int64_t>(out.size()) < seq_len - 1) out.push_back(' ' + 1);
    pending_space = false;
    out.push_back(static_cast<std::int64_t>(c) + 1);
  }
  out.resize(seq_len, 0);
  return out;
}

namespace detail {
std::shared_ptr<Dataset> tensor_dataset(at::Tensor x, at::Tensor y, const std::vector<float>& mean,
                                        const std::vector<float>& stdev) {
  return std::make_shared<TensorDataset>(std::move(x), std::move(y), mean, stdev);
}
}  // namespace detail

const std::vector<std::string>& dataset_names() {
  static const std::vector<std::string> names = {"synthetic",     "cifar10", "mnist",
                                                 "fashion-mnist", "text",    "hdf5"};
  return names;
}

DataSplits make_dataset(const DatasetOptions& o) {
  DataSplits d;
  if (o.name == "synthetic") return make_synthetic(o);
  if (o.name == "cifar10")
    d = make_cifar10(o);
  else if (o.name == "mnist")
    d = make_mnist(o);
  else if (o.name == "fashion-mnist")
    d = make_fashion_mnist(o);
  else if (o.name == "text")
    d = make_text(o);
  else if (o.name == "hdf5")
    d = detail::make_hdf5(o);
  else
    throw BadInput("gridrun-train: unknown dataset '" + o.name +
                   "' (known: synthetic, cifar10, mnist, fashion-mnist, text, hdf5)");
  if (o.tokens_any) return d;
  if (o.tokens != (d.input.channels == 0))
    throw BadInput("gridrun-train: dataset=" + o.name +
                   (o.tokens ? " gives images but the model "
                               "takes token ids"
                             : " gives token ids but the model takes images (use "
                               "model=transformer)"));
  return d;
}

}  // namespace gridrun::runner
