// DataFile (data_file.hpp): the checks of an HDF5 data set file and its row reads.
//
// Every message starts with the file's path and says what was expected, because the user wrote the
// file (h5py, usually) and will fix it from that one line. HDF5 errors are caught and re-thrown the
// same way (a truncated file: "PATH: not a readable HDF5 file (...)").
//
// Why the file is distrusted (issue 45, finding 7): the job id holds the file's content hash, so
// the job may read nothing but the file's own bytes (no external or soft links, virtual data sets
// or external storage: each would read another file, or the fill value for a missing one), and a
// small file must not declare more than it stores (2^34 rows in 729 KB kept `plan` busy for 223 s
// reading fill-value labels). Both are decided from HDF5's metadata before any value is read.
#include "gridrun/dataset/data_file.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <utility>

#include "gridrun/base/checked.hpp"
#include "gridrun/base/spawn.hpp"
#include "gridrun/h5/h5.hpp"

namespace gridrun::dataset {

namespace {

std::string dims_text(const std::vector<hsize_t>& d) {
  std::string s = "[";
  for (std::size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

struct TypeFacts {
  H5T_class_t cls = H5T_NO_CLASS;
  std::size_t size = 0;
  bool is_signed = false;
  std::string name() const {
    if (cls == H5T_INTEGER) return std::string(is_signed ? "int" : "uint") + std::to_string(8 * size);
    if (cls == H5T_FLOAT) return "float" + std::to_string(8 * size);
    if (cls == H5T_STRING) return "string";
    return "a non-numeric type";
  }
};

TypeFacts type_of(hid_t ds) {
  h5::Id t = H5_OWN(H5Dget_type(ds), H5Tclose);
  TypeFacts f;
  f.cls = H5Tget_class(t);
  f.size = H5Tget_size(t);
  if (f.cls == H5T_INTEGER) f.is_signed = H5Tget_sign(t) == H5T_SGN_2;
  return f;
}

std::vector<hsize_t> dims_of(hid_t ds) {
  h5::Id sp = H5_OWN(H5Dget_space(ds), H5Sclose);
  const int n = H5_CHECK(H5Sget_simple_extent_ndims(sp));
  std::vector<hsize_t> d(static_cast<std::size_t>(n));
  if (n > 0) H5_CHECK(H5Sget_simple_extent_dims(sp, d.data(), nullptr));
  return d;
}

// A numeric attribute of the file's root as doubles (a scalar or a 1-D array); empty when absent.
std::vector<double> attr_numbers(hid_t file, const std::string& name, const std::string& path) {
  if (H5_CHECK(H5Aexists(file, name.c_str())) <= 0) return {};
  h5::Id a = H5_OWN(H5Aopen(file, name.c_str(), H5P_DEFAULT), H5Aclose);
  h5::Id t = H5_OWN(H5Aget_type(a), H5Tclose);
  const H5T_class_t cls = H5Tget_class(t);
  if (cls != H5T_INTEGER && cls != H5T_FLOAT)
    throw DataFileError(path + ": attribute '" + name +
                        "' is not a number (expected a number or a list of numbers)");
  h5::Id sp = H5_OWN(H5Aget_space(a), H5Sclose);
  const hssize_t n = H5Sget_simple_extent_npoints(sp);
  if (n < 1 || n > 4096)
    throw DataFileError(path + ": attribute '" + name + "' has " + std::to_string(n) +
                        " values (expected 1 to 4096)");
  std::vector<double> v(static_cast<std::size_t>(n));
  H5_CHECK(H5Aread(a, H5T_NATIVE_DOUBLE, v.data()));
  return v;
}

std::int64_t attr_int(hid_t file, const std::string& name, const std::string& path) {
  const auto v = attr_numbers(file, name, path);
  if (v.empty()) return 0;
  // Range first: converting a double beyond int64 (or NaN) is undefined behaviour.
  if (v.size() != 1 || !(std::fabs(v[0]) < 0x1p62) ||
      v[0] != static_cast<double>(static_cast<std::int64_t>(v[0])))
    throw DataFileError(path + ": attribute '" + name + "' must be one integer");
  return static_cast<std::int64_t>(v[0]);
}

// A name the file holds (a link's target, another file's name), fit for a one-line message: at
// most 200 characters, control characters as '?' (a hostile file could hold a newline).
std::string printable(const char* s) {
  std::string out;
  for (; s && *s && out.size() < 200; ++s) out.push_back(static_cast<unsigned char>(*s) < 0x20 ? '?' : *s);
  return out;
}

constexpr const char* kOnlyThisFile =
    "expected the data stored in this file: gridrun reads nothing but the named file, whose bytes make "
    "the job id; see docs/own-model.md";

// Each link on the way to `name` ("/train", then "/train/x") must be a hard link, checked before
// the next one is followed: H5Lexists and H5Lget_info on "/train/x" would already open the file an
// external link "/train" names. Throws the layout's "no data set" when one is missing.
void check_links(hid_t file, const std::string& name, const std::string& path) {
  for (std::size_t slash = name.find('/', 1);; slash = name.find('/', slash + 1)) {
    const std::string at = name.substr(0, slash);
    if (H5_CHECK(H5Lexists(file, at.c_str(), H5P_DEFAULT)) <= 0)
      throw DataFileError(
          path + ": no data set " + name +
          " (expected /train/x with the inputs and /train/y with the labels; see docs/own-model.md)");
    H5L_info_t li{};
    H5_CHECK(H5Lget_info(file, at.c_str(), &li, H5P_DEFAULT));
    if (li.type != H5L_TYPE_HARD) {
      std::vector<char> val(li.u.val_size + 1, '\0');
      std::string what = "a user-defined link";
      if (li.type == H5L_TYPE_SOFT || li.type == H5L_TYPE_EXTERNAL)
        H5_CHECK(H5Lget_val(file, at.c_str(), val.data(), val.size(), H5P_DEFAULT));
      if (li.type == H5L_TYPE_SOFT) what = "a soft link to " + printable(val.data());
      const char *target_file = nullptr, *target_obj = nullptr;
      if (li.type == H5L_TYPE_EXTERNAL &&
          H5Lunpack_elink_val(val.data(), li.u.val_size, nullptr, &target_file, &target_obj) >= 0)
        what = "an external link to '" + printable(target_file) + "':" + printable(target_obj);
      throw DataFileError(path + ": " + at + " is " + what + " (" + kOnlyThisFile + ")");
    }
    if (slash == std::string::npos) return;
  }
}

// A data set whose values live elsewhere: virtual (rows mapped from other files; a missing one
// reads as the fill value) or external storage (raw bytes in another file).
void check_stored_here(hid_t ds, const std::string& name, const std::string& path) {
  h5::Id dcpl = H5_OWN(H5Dget_create_plist(ds), H5Pclose);
  if (H5Pget_layout(dcpl) == H5D_VIRTUAL) {
    std::size_t n = 0;
    H5_CHECK(H5Pget_virtual_count(dcpl, &n));
    std::string src = "?";
    if (n > 0) {
      const ssize_t len = H5Pget_virtual_filename(dcpl, 0, nullptr, 0);
      if (len >= 0) {
        std::vector<char> buf(static_cast<std::size_t>(len) + 1, '\0');
        H5Pget_virtual_filename(dcpl, 0, buf.data(), buf.size());
        src = printable(buf.data());
      }
    }
    throw DataFileError(path + ": " + name + " is a virtual data set whose rows come from '" + src + "'" +
                        (n > 1 ? " and " + std::to_string(n - 1) + " more" : "") + " (" + kOnlyThisFile +
                        ")");
  }
  if (H5_CHECK(H5Pget_external_count(dcpl)) > 0) {
    char ext[1024] = {0};
    off_t offset = 0;
    hsize_t size = 0;
    H5_CHECK(H5Pget_external(dcpl, 0, sizeof ext, ext, &offset, &size));
    throw DataFileError(path + ": " + name + " keeps its values in the external file '" + printable(ext) +
                        "' (" + kOnlyThisFile + ")");
  }
}

// Declared size against stored size, so that no read goes beyond what the file holds: contiguous
// and compact data must store exactly their declared bytes (within the file), chunked data every
// one of its chunks (a chunk never written reads as the fill value; a compressed one may be small,
// which is why chunks are counted rather than bytes compared).
void check_storage(hid_t file, hid_t ds, const std::string& name, const std::string& path) {
  h5::Id dcpl = H5_OWN(H5Dget_create_plist(ds), H5Pclose);
  h5::Id type = H5_OWN(H5Dget_type(ds), H5Tclose);
  h5::Id sp = H5_OWN(H5Dget_space(ds), H5Sclose);
  const int rank = H5_CHECK(H5Sget_simple_extent_ndims(sp));
  std::vector<hsize_t> dims(static_cast<std::size_t>(rank));
  if (rank > 0) H5_CHECK(H5Sget_simple_extent_dims(sp, dims.data(), nullptr));
  const hsize_t stored = H5Dget_storage_size(ds);
  std::uint64_t declared = H5Tget_size(type);
  for (hsize_t d : dims) declared = base::saturating_mul<std::uint64_t>(declared, d);
  const std::string decl = "declares " + dims_text(dims) + " (" + std::to_string(declared) + " bytes)";
  const H5D_layout_t layout = H5Pget_layout(dcpl);
  if (layout == H5D_CHUNKED) {
    std::vector<hsize_t> chunk(dims.size());
    H5_CHECK(H5Pget_chunk(dcpl, rank, chunk.data()));
    std::uint64_t want = 1;
    for (std::size_t i = 0; i < dims.size(); ++i)
      want = base::saturating_mul<std::uint64_t>(want, chunk[i] ? (dims[i] + chunk[i] - 1) / chunk[i] : 0);
    hsize_t have = 0;
    H5_CHECK(H5Dget_num_chunks(ds, sp, &have));  // sp, not H5S_ALL: 1.10.8 refuses that
    if (have != want)
      throw DataFileError(path + ": " + name + " " + decl + " in " + std::to_string(want) + " chunks, but " +
                          std::to_string(have) +
                          " are stored (expected every chunk written: one never written reads as the "
                          "fill value)");
    return;
  }
  if (stored != declared)
    throw DataFileError(path + ": " + name + " " + decl + " but stores " + std::to_string(stored) +
                        " bytes (expected every value written: one never written reads as the fill value)");
  if (layout != H5D_CONTIGUOUS || stored == 0) return;
  hsize_t file_size = 0;
  H5_CHECK(H5Fget_filesize(file, &file_size));
  const haddr_t at = H5Dget_offset(ds);
  if (at == HADDR_UNDEF || at > file_size || stored > file_size - at)
    throw DataFileError(path + ": " + name + " " + decl + " stored past the end of the file (" +
                        std::to_string(file_size) + " bytes; a truncated or forged file)");
}

hid_t mem_type(DataKind k) {
  switch (k) {
    case DataKind::UInt8: return H5T_NATIVE_UINT8;
    case DataKind::Float32: return H5T_NATIVE_FLOAT;
    case DataKind::Tokens: return H5T_NATIVE_INT64;
  }
  return H5T_NATIVE_FLOAT;
}

}  // namespace

struct DataFile::Impl {
  h5::Id file;
  struct Split {
    h5::Id x, y;
  };
  Split train, test;
  std::size_t sample_elems = 1;
  std::vector<hsize_t> sample_dims;
  hid_t xtype = H5T_NATIVE_FLOAT;

  const Split& split(const std::string& name) const {
    if (name == "train") return train;
    if (name == "test" && test.x.valid()) return test;
    throw std::invalid_argument("DataFile: no split '" + name + "'");
  }

  // The steps of DataFile::open, in order; each throws DataFileError naming the file.
  void open_sets(const std::string& path);  // the four data sets; links and outside storage refused
  void check_inputs(DataFileInfo& info, const std::string& path);  // /train/x: kind and sample shape
  // A split's x and y against /train/x: rows, type, sample shape, one integer label per row.
  std::int64_t check_pair(const Split& s, const std::string& g, const std::string& path) const;
  void model_shapes(DataFileInfo& info, const std::string& path) const;  // what the model sees
  void check_labels(const DataFile& df, DataFileInfo& info, const std::string& path) const;
};

std::int64_t DataFileInfo::sample_bytes() const {
  std::int64_t n = 1;
  for (auto d : sample_shape) n *= d;
  return n * (kind == DataKind::UInt8 ? 1 : kind == DataKind::Float32 ? 4 : 8);
}

DataFile::~DataFile() = default;
DataFile::DataFile(DataFile&&) noexcept = default;
DataFile& DataFile::operator=(DataFile&&) noexcept = default;

void DataFile::Impl::open_sets(const std::string& path) {
  file = H5_OWN(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  // Room for a few chunks of a data set per read (HDF5's default cache is 1 MiB).
  h5::Id dapl = H5_OWN(H5Pcreate(H5P_DATASET_ACCESS), H5Pclose);
  H5_CHECK(H5Pset_chunk_cache(dapl, 12421, std::size_t{64} << 20, 1.0));
  // check_links refuses every link but a hard one; this refuses an external link's traversal in
  // HDF5 itself too, should one be reached some other way.
  H5_CHECK(H5Pset_elink_cb(
      dapl,
      [](const char*, const char*, const char*, const char*, unsigned*, hid_t, void*) -> herr_t {
        return -1;
      },
      nullptr));
  auto need = [&](const std::string& name) -> h5::Id {
    check_links(file, name, path);
    const hid_t ds = H5Dopen2(file, name.c_str(), dapl);
    if (ds < 0) throw DataFileError(path + ": " + name + " is not a data set (expected an array)");
    h5::Id id(ds, H5Dclose);
    check_stored_here(id, name, path);
    return id;
  };
  train.x = need("/train/x");
  train.y = need("/train/y");
  if (H5_CHECK(H5Lexists(file, "/test", H5P_DEFAULT)) > 0) {
    test.x = need("/test/x");
    test.y = need("/test/y");
  }
}

void DataFile::Impl::check_inputs(DataFileInfo& info, const std::string& path) {
  // x: its type decides what the model gets.
  const TypeFacts xt = type_of(train.x);
  const std::vector<hsize_t> xd = dims_of(train.x);
  if (xt.cls == H5T_INTEGER && xt.size == 1 && !xt.is_signed)
    info.kind = DataKind::UInt8;
  else if (xt.cls == H5T_FLOAT && xt.size == 4)
    info.kind = DataKind::Float32;
  else if (xt.cls == H5T_INTEGER && (xt.size == 4 || xt.size == 8))
    info.kind = DataKind::Tokens;
  else
    throw DataFileError(path + ": /train/x is " + xt.name() +
                        " (expected float32 or uint8 inputs, or int32/int64 token ids)");
  if (info.kind == DataKind::Tokens ? xd.size() != 2 : (xd.size() < 2 || xd.size() > 4))
    throw DataFileError(path + ": /train/x has shape " + dims_text(xd) + " (expected " +
                        (info.kind == DataKind::Tokens ? "[N, L] for token ids"
                                                       : "[N, C, H, W], [N, H, W] or [N, F] for inputs") +
                        ")");
  sample_dims.assign(xd.begin() + 1, xd.end());
  for (auto d : sample_dims) {
    if (d == 0)
      throw DataFileError(path + ": /train/x has shape " + dims_text(xd) + " (a sample has no elements)");
    sample_elems = base::saturating_mul<std::size_t>(sample_elems, d);
    info.sample_shape.push_back(static_cast<std::int64_t>(d));
  }
  if (sample_elems > static_cast<std::size_t>(kMaxSampleElements))
    throw DataFileError(path + ": /train/x has shape " + dims_text(xd) + " (expected at most " +
                        std::to_string(kMaxSampleElements) + " elements per sample)");
  xtype = mem_type(info.kind);
  info.train = {"train", static_cast<std::int64_t>(xd[0])};
  if (info.train.rows == 0) throw DataFileError(path + ": /train/x has no samples");
}

std::int64_t DataFile::Impl::check_pair(const Split& s, const std::string& g, const std::string& path) const {
  const TypeFacts xt = type_of(train.x);
  const std::vector<hsize_t> xd = dims_of(train.x);
  const std::vector<hsize_t> d = dims_of(s.x);
  if (d.empty() || d[0] > static_cast<hsize_t>(kMaxRows))
    throw DataFileError(path + ": /" + g + "/x has shape " + dims_text(d) + " (expected at most " +
                        std::to_string(kMaxRows) + " rows)");
  const TypeFacts t = type_of(s.x);
  if (t.cls != xt.cls || t.size != xt.size || t.is_signed != xt.is_signed)
    throw DataFileError(path + ": /" + g + "/x is " + t.name() + " but /train/x is " + xt.name() +
                        " (expected the same type)");
  if (d.size() != xd.size() || !std::equal(d.begin() + 1, d.end(), xd.begin() + 1))
    throw DataFileError(path + ": /" + g + "/x has shape " + dims_text(d) + " (expected [N" +
                        dims_text(sample_dims).replace(0, 1, sample_dims.empty() ? "" : ", ") + ")");
  const std::vector<hsize_t> yd = dims_of(s.y);
  const TypeFacts yt = type_of(s.y);
  if (yt.cls != H5T_INTEGER)
    throw DataFileError(path + ": /" + g + "/y is " + yt.name() + " (expected integer class labels)");
  if (yd.size() != 1 || yd[0] != d[0])
    throw DataFileError(path + ": /" + g + "/y has shape " + dims_text(yd) + " (expected [" +
                        std::to_string(d[0]) + "], one label per row of /" + g + "/x)");
  return static_cast<std::int64_t>(d[0]);
}

void DataFile::Impl::model_shapes(DataFileInfo& info, const std::string& path) const {
  // Shapes the model sees.
  if (info.kind == DataKind::Tokens) {
    info.seq_len = info.sample_shape[0];
    info.vocab = attr_int(file, "vocab", path);
    if (info.vocab < 2)
      throw DataFileError(path +
                          ": token ids need the attribute 'vocab' (an integer >= 2: ids are in [0, vocab))");
    if (info.vocab > kMaxVocab)
      throw DataFileError(path + ": attribute 'vocab' is " + std::to_string(info.vocab) + " (expected 2 to " +
                          std::to_string(kMaxVocab) + ")");
  } else {
    const auto& s = info.sample_shape;
    info.channels = s.size() == 3 ? s[0] : 1;
    info.height = s.size() == 3 ? s[1] : s.size() == 2 ? s[0] : 1;
    info.width = s.back();
    auto per_channel = [&](const char* name, double dflt) {
      std::vector<double> v = attr_numbers(file, name, path);
      if (v.empty()) v = {dflt};
      if (v.size() == 1) v.assign(static_cast<std::size_t>(info.channels), v[0]);
      if (static_cast<std::int64_t>(v.size()) != info.channels)
        throw DataFileError(path + ": attribute '" + name + "' has " + std::to_string(v.size()) +
                            " values for " + std::to_string(info.channels) + " channels (expected 1 or " +
                            std::to_string(info.channels) + ")");
      return std::vector<float>(v.begin(), v.end());
    };
    info.mean = per_channel("mean", 0.0);
    info.stdev = per_channel("std", 1.0);
    for (float sd : info.stdev)
      if (!(sd > 0) || !std::isfinite(sd))
        throw DataFileError(path + ": attribute 'std' must be > 0 and finite");
    for (float m : info.mean)
      if (!std::isfinite(m)) throw DataFileError(path + ": attribute 'mean' must be finite");
  }
}

// Labels: every one in range, read in blocks (a file larger than memory has small labels).
void DataFile::Impl::check_labels(const DataFile& df, DataFileInfo& info, const std::string& path) const {
  const std::int64_t given = attr_int(file, "classes", path);
  std::int64_t lo = 0, hi = 0, lo_row = 0, hi_row = 0;
  std::string lo_split = "train", hi_split = "train";
  bool first = true;
  std::vector<std::int64_t> buf;
  for (const Impl::Split* s : {&train, &test}) {
    if (!s->x.valid()) continue;
    const std::string g = s == &train ? "train" : "test";
    const std::int64_t rows = g == "train" ? info.train.rows : info.test.rows;
    for (std::int64_t at = 0; at < rows; at += std::int64_t{1} << 20) {
      const std::int64_t n = std::min<std::int64_t>(rows - at, std::int64_t{1} << 20);
      buf.resize(static_cast<std::size_t>(n));
      df.read_block(g, at, n, nullptr, buf.data());
      for (std::int64_t i = 0; i < n; ++i) {
        const std::int64_t v = buf[static_cast<std::size_t>(i)];
        if (first || v < lo) lo = v, lo_row = at + i, lo_split = g;
        if (first || v > hi) hi = v, hi_row = at + i, hi_split = g;
        first = false;
      }
    }
  }
  // Labels are class indices: int32 (what a 2^31+5 label asked 128 GiB of) and in [0, classes),
  // where classes is at most kMaxClasses (each is one output of the model's last layer).
  auto label = [&](const std::string& g, std::int64_t row, std::int64_t v) {
    return path + ": /" + g + "/y[" + std::to_string(row) + "] is " + std::to_string(v);
  };
  if (lo < 0) throw DataFileError(label(lo_split, lo_row, lo) + " (expected labels in [0, classes))");
  if (hi > std::numeric_limits<std::int32_t>::max())
    throw DataFileError(label(hi_split, hi_row, hi) +
                        " (expected labels in [0, classes) that fit int32, i.e. at most 2147483647)");
  if (given < 0 || given > kMaxClasses)
    throw DataFileError(path + ": attribute 'classes' is " + std::to_string(given) + " (expected 2 to " +
                        std::to_string(kMaxClasses) + ")");
  if (given > 0 && hi >= given)
    throw DataFileError(label(hi_split, hi_row, hi) + " (expected labels in [0, " + std::to_string(given) +
                        "): the attribute 'classes' is " + std::to_string(given) + ")");
  if (given == 0 && hi >= kMaxClasses)
    throw DataFileError(label(hi_split, hi_row, hi) + " (expected labels in [0, " +
                        std::to_string(kMaxClasses) + "): a label names a class, at most " +
                        std::to_string(kMaxClasses) + " of them)");
  info.classes = given > 0 ? given : hi + 1;
  if (info.classes < 2)
    throw DataFileError(path + ": the labels name " + std::to_string(info.classes) +
                        " class (expected 2 or more; set the attribute 'classes')");
}

DataFile DataFile::open(const std::string& path) {
  h5::Quiet quiet;
  DataFile df;
  df.impl_ = std::make_unique<Impl>();
  Impl& im = *df.impl_;
  DataFileInfo& info = df.info_;
  info.path = path;
  try {
    const htri_t is = H5Fis_hdf5(path.c_str());
    if (is <= 0) {
      const std::string why = h5::last_error_message();
      throw DataFileError(path + ": not a readable HDF5 file" + (why.empty() ? "" : " (" + why + ")"));
    }
    im.open_sets(path);
    im.check_inputs(info, path);
    im.check_pair(im.train, "train", path);
    if (im.test.x.valid()) {
      info.test = {"test", im.check_pair(im.test, "test", path)};
      if (info.test.rows == 0)
        throw DataFileError(path + ": /test/x has no samples (leave /test out instead)");
    }
    // Types and shapes are known good; now that the file holds what it declares, before any read.
    for (const Impl::Split* s : {&im.train, &im.test}) {
      if (!s->x.valid()) continue;
      const std::string g = s == &im.train ? "/train" : "/test";
      check_storage(im.file, s->x, g + "/x", path);
      check_storage(im.file, s->y, g + "/y", path);
    }
    im.model_shapes(info, path);
    im.check_labels(df, info, path);
  } catch (const DataFileError&) {
    throw;
  } catch (const std::exception& e) {
    // An h5::Error says where in gridrun it failed; the user needs the file and HDF5's reason.
    std::string why = h5::last_error_message();
    if (why.empty()) {
      why = e.what();
      const auto at = why.find(" failed: ");  // "data_file.cpp:133: H5Fopen(...) failed: REASON"
      if (at != std::string::npos) why = why.substr(at + 9);
    }
    throw DataFileError(path + ": cannot be read as an HDF5 data file (" + why + ")");
  }
  return df;
}

void DataFile::read_block(const std::string& split, std::int64_t first, std::int64_t n, void* x_out,
                          std::int64_t* y_out) const {
  if (n <= 0) return;
  h5::Quiet quiet;
  const Impl::Split& s = impl_->split(split);
  auto read = [&](hid_t ds, hid_t type, void* out, const std::vector<hsize_t>& inner) {
    h5::Id fs = H5_OWN(H5Dget_space(ds), H5Sclose);
    std::vector<hsize_t> start(inner.size() + 1, 0), count(inner.size() + 1);
    start[0] = static_cast<hsize_t>(first);
    count[0] = static_cast<hsize_t>(n);
    std::copy(inner.begin(), inner.end(), count.begin() + 1);
    H5_CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_SET, start.data(), nullptr, count.data(), nullptr));
    h5::Id ms = H5_OWN(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), H5Sclose);
    H5_CHECK(H5Dread(ds, type, ms, fs, H5P_DEFAULT, out));
  };
  if (x_out) read(s.x, impl_->xtype, x_out, impl_->sample_dims);
  if (y_out) read(s.y, H5T_NATIVE_INT64, y_out, {});
}

void DataFile::read_rows(const std::string& split, const std::vector<std::int64_t>& rows, void* x_out,
                         std::int64_t* y_out) const {
  if (rows.empty()) return;
  h5::Quiet quiet;
  const Impl::Split& s = impl_->split(split);
  // One selection of the distinct rows in file order (HDF5 reads a union of hyperslabs in that
  // order), then each requested position copied from its row.
  std::vector<std::int64_t> uniq(rows);
  std::sort(uniq.begin(), uniq.end());
  uniq.erase(std::unique(uniq.begin(), uniq.end()), uniq.end());
  auto read = [&](hid_t ds, hid_t type, std::size_t elem_bytes, std::size_t row_elems,
                  const std::vector<hsize_t>& inner, char* out) {
    h5::Id fs = H5_OWN(H5Dget_space(ds), H5Sclose);
    std::vector<hsize_t> start(inner.size() + 1, 0), count(inner.size() + 1);
    std::copy(inner.begin(), inner.end(), count.begin() + 1);
    H5_CHECK(H5Sselect_none(fs));
    for (std::size_t i = 0; i < uniq.size();) {
      std::size_t j = i + 1;
      while (j < uniq.size() && uniq[j] == uniq[j - 1] + 1) ++j;
      start[0] = static_cast<hsize_t>(uniq[i]);
      count[0] = static_cast<hsize_t>(j - i);
      H5_CHECK(H5Sselect_hyperslab(fs, H5S_SELECT_OR, start.data(), nullptr, count.data(), nullptr));
      i = j;
    }
    count[0] = static_cast<hsize_t>(uniq.size());
    h5::Id ms = H5_OWN(H5Screate_simple(static_cast<int>(count.size()), count.data(), nullptr), H5Sclose);
    const std::size_t row_bytes = elem_bytes * row_elems;
    const bool direct = uniq.size() == rows.size() && std::equal(uniq.begin(), uniq.end(), rows.begin());
    std::vector<char> tmp(direct ? 0 : uniq.size() * row_bytes);
    char* dst = direct ? out : tmp.data();
    H5_CHECK(H5Dread(ds, type, ms, fs, H5P_DEFAULT, dst));
    if (direct) return;
    for (std::size_t k = 0; k < rows.size(); ++k) {
      const auto at =
          static_cast<std::size_t>(std::lower_bound(uniq.begin(), uniq.end(), rows[k]) - uniq.begin());
      std::memcpy(out + k * row_bytes, tmp.data() + at * row_bytes, row_bytes);
    }
  };
  const std::size_t xb = info_.kind == DataKind::UInt8 ? 1 : info_.kind == DataKind::Float32 ? 4 : 8;
  if (x_out) read(s.x, impl_->xtype, xb, impl_->sample_elems, impl_->sample_dims, static_cast<char*>(x_out));
  if (y_out) read(s.y, H5T_NATIVE_INT64, 8, 1, {}, reinterpret_cast<char*>(y_out));
}

std::string check_data_file(const std::string& path, int tokens) {
  try {
    const DataFile f = DataFile::open(path);
    const DataFileInfo& i = f.info();
    const bool has_tokens = i.kind == DataKind::Tokens;
    if (tokens == 1 && !has_tokens)
      return path + ": /train/x holds inputs (" + (i.kind == DataKind::UInt8 ? "uint8" : "float32") +
             "), but the model takes token ids (expected int32/int64 [N, L])";
    if (tokens == 0 && has_tokens)
      return path +
             ": /train/x holds token ids, but the model takes images (expected float32 or uint8 [N, C, H, "
             "W])";
    return "";
  } catch (const std::exception& e) {
    return e.what();
  }
}

std::string check_job_data_file(const jobs::JobParams& job) {
  const int tokens = jobs::model_kind(job) == jobs::ModelKind::file ? -1 : job.model == "transformer" ? 1 : 0;
  const std::string path = job.data_file;
  // Reading every label of a large file takes a while; a hang is bounded all the same.
  const base::IsolatedRun r = base::run_isolated([&] { return check_data_file(path, tokens); }, 600.0);
  if (r.ok) return "";
  if (!r.no_answer) return r.message;
  return path + ": damaged: reading it " +
         (r.timed_out ? std::string("took over 600 s") : "crashed the HDF5 library (" + r.message + ")") +
         " (expected the layout in docs/own-model.md)";
}

}  // namespace gridrun::dataset
