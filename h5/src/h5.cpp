// Implementation of the RAII/checked-call layer over HDF5 (see h5.hpp for why it exists).
#include "gridrun/h5/h5.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

// In libhdf5 since 1.8.7 (H5private.h, not installed): the Jenkins lookup3 hash of its metadata.
extern "C" uint32_t H5_checksum_metadata(const void* data, size_t len, uint32_t initval);

namespace gridrun::h5 {

namespace {

// libhdf5 1.10's exit handler (H5close, registered at its first call) closes every id still open;
// an H5Fclose that failed at a full disk (a write at close, after a good flush) has freed its file
// but kept the id, and the handler then crashes on it (SIGSEGV after a clean error message,
// issue 45). Every file is closed by its owner (RAII), so the handler has nothing to do: it is
// turned off before the library starts, by this object's initialisation at load time.
const herr_t kNoExitHandler = H5dont_atexit();

herr_t innermost(unsigned n, const H5E_error2_t* e, void* out) {
  // Walking downward, the first entry is the API call and the last is the root cause: keep both.
  auto* s = static_cast<std::string*>(out);
  std::string msg = e->desc ? e->desc : "";
  if (n == 0) {
    *s = msg;
  } else if (!msg.empty() && s->find(msg) == std::string::npos) {
    *s += "; " + msg;
  }
  return 0;
}

Id scalar_space() { return H5_OWN(H5Screate(H5S_SCALAR), H5Sclose); }

Id utf8_vl_string() {
  Id t = H5_OWN(H5Tcopy(H5T_C_S1), H5Tclose);
  H5_CHECK(H5Tset_size(t, H5T_VARIABLE));
  H5_CHECK(H5Tset_cset(t, H5T_CSET_UTF8));
  return t;
}

void delete_attr_if_present(hid_t loc, const std::string& name) {
  if (H5_CHECK(H5Aexists(loc, name.c_str())) > 0) H5_CHECK(H5Adelete(loc, name.c_str()));
}

}  // namespace

std::string last_error_message() {
  std::string s;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, innermost, &s);
  return s;
}

namespace {
// "<file>:<line>: <call> failed: <HDF5's message>", the file without its directories.
std::string failure_text(const char* expr, const char* file, int line, const std::string& h5) {
  std::string where = file;
  auto slash = where.rfind('/');
  if (slash != std::string::npos) where = where.substr(slash + 1);
  std::string msg = where + ":" + std::to_string(line) + ": " + expr + " failed";
  if (!h5.empty()) msg += ": " + h5;
  return msg;
}
}  // namespace

void fail(const char* expr, const char* file, int line) {
  std::string msg = failure_text(expr, file, line, last_error_message());
  H5Eclear2(H5E_DEFAULT);
  throw Error(msg);
}

Quiet::Quiet() {
  H5Eget_auto2(H5E_DEFAULT, &func_, &data_);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
}
Quiet::~Quiet() { H5Eset_auto2(H5E_DEFAULT, func_, data_); }

void Id::close_checked(const char* file, int line) {
  if (id_ < 0) return;
  hid_t id = id_;
  id_ = H5I_INVALID_HID;
  if (close_ && close_(id) < 0) fail("close", file, line);
}

void write_attr(hid_t loc, const std::string& name, const std::string& value) {
  delete_attr_if_present(loc, name);
  Id type = utf8_vl_string();
  Id space = scalar_space();
  Id a = H5_OWN(H5Acreate2(loc, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  const char* p = value.c_str();
  H5_CHECK(H5Awrite(a, type, &p));
}

void write_attr(hid_t loc, const std::string& name, std::int64_t value) {
  delete_attr_if_present(loc, name);
  Id space = scalar_space();
  Id a = H5_OWN(H5Acreate2(loc, name.c_str(), H5T_STD_I64LE, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  H5_CHECK(H5Awrite(a, H5T_NATIVE_INT64, &value));
}

void write_attr(hid_t loc, const std::string& name, double value) {
  delete_attr_if_present(loc, name);
  Id space = scalar_space();
  Id a = H5_OWN(H5Acreate2(loc, name.c_str(), H5T_IEEE_F64LE, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  H5_CHECK(H5Awrite(a, H5T_NATIVE_DOUBLE, &value));
}

bool has_attr(hid_t loc, const std::string& name) { return H5_CHECK(H5Aexists(loc, name.c_str())) > 0; }

namespace {

struct AttrCollector {
  std::vector<std::pair<std::string, AttrValue>> out;
  std::string error;
};

herr_t collect_attr(hid_t loc, const char* name, const H5A_info_t*, void* data) {
  auto* c = static_cast<AttrCollector*>(data);
  try {
    Id a = H5_OWN(H5Aopen(loc, name, H5P_DEFAULT), H5Aclose);
    Id space = H5_OWN(H5Aget_space(a), H5Sclose);
    if (H5Sget_simple_extent_npoints(space) != 1) return 0;
    Id type = H5_OWN(H5Aget_type(a), H5Tclose);
    switch (H5Tget_class(type)) {
      case H5T_INTEGER: {
        std::int64_t v = 0;
        H5_CHECK(H5Aread(a, H5T_NATIVE_INT64, &v));
        c->out.emplace_back(name, v);
        break;
      }
      case H5T_FLOAT: {
        double v = 0;
        H5_CHECK(H5Aread(a, H5T_NATIVE_DOUBLE, &v));
        c->out.emplace_back(name, v);
        break;
      }
      case H5T_STRING: {
        if (H5_CHECK(H5Tis_variable_str(type)) > 0) {
          Id mt = utf8_vl_string();
          char* p = nullptr;
          H5_CHECK(H5Aread(a, mt, &p));
          c->out.emplace_back(name, std::string(p ? p : ""));
          Id sp = scalar_space();
          H5Dvlen_reclaim(mt, sp, H5P_DEFAULT, &p);
        } else {
          std::size_t n = H5Tget_size(type);
          std::string s(n, '\0');
          H5_CHECK(H5Aread(a, type, s.data()));
          s.resize(std::strlen(s.c_str()));
          c->out.emplace_back(name, s);
        }
        break;
      }
      default: break;
    }
  } catch (const std::exception& e) {
    c->error = e.what();
    return -1;
  }
  return 0;
}

}  // namespace

std::vector<std::pair<std::string, AttrValue>> read_attrs(hid_t loc) {
  AttrCollector c;
  hsize_t idx = 0;
  herr_t r = H5Aiterate2(loc, H5_INDEX_NAME, H5_ITER_INC, &idx, collect_attr, &c);
  if (!c.error.empty()) throw Error(c.error);
  if (r < 0) fail("H5Aiterate2", __FILE__, __LINE__);
  return std::move(c.out);
}

Id checksummed_chunks(int rank, const hsize_t* chunk) {
  Id dcpl = H5_OWN(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  H5_CHECK(H5Pset_chunk(dcpl, rank, chunk));
  H5_CHECK(H5Pset_fletcher32(dcpl));
  return dcpl;
}

bool exists(hid_t loc, const std::string& path) {
  // H5Lexists on "a/b" needs "a" to exist: check each component.
  std::string sofar;
  std::size_t start = 0;
  while (start <= path.size()) {
    std::size_t slash = path.find('/', start);
    std::string part = path.substr(start, slash == std::string::npos ? std::string::npos : slash - start);
    sofar += (sofar.empty() ? "" : "/") + part;
    if (H5_CHECK(H5Lexists(loc, sofar.c_str(), H5P_DEFAULT)) <= 0) return false;
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return true;
}

Id create_column(hid_t group, const std::string& name, hid_t type, hsize_t width, hsize_t chunk_rows) {
  int rank = width == 0 ? 1 : 2;
  hsize_t dims[2] = {0, width};
  hsize_t maxdims[2] = {H5S_UNLIMITED, width};
  hsize_t chunk[2] = {chunk_rows, width};
  Id space = H5_OWN(H5Screate_simple(rank, dims, maxdims), H5Sclose);
  Id dcpl = checksummed_chunks(rank, chunk);
  return H5_OWN(H5Dcreate2(group, name.c_str(), type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose);
}

void write_rows(hid_t ds, hid_t mem_type, hsize_t first, hsize_t n, hsize_t width, const void* buf) {
  int rank = width == 0 ? 1 : 2;
  hsize_t size[2] = {first + n, width};
  H5_CHECK(H5Dset_extent(ds, size));
  if (n == 0) return;
  Id fspace = H5_OWN(H5Dget_space(ds), H5Sclose);
  hsize_t start[2] = {first, 0};
  hsize_t count[2] = {n, width};
  H5_CHECK(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, nullptr, count, nullptr));
  Id mspace = H5_OWN(H5Screate_simple(rank, count, nullptr), H5Sclose);
  H5_CHECK(H5Dwrite(ds, mem_type, mspace, fspace, H5P_DEFAULT, buf));
}

hsize_t rows_of(hid_t ds) {
  Id space = H5_OWN(H5Dget_space(ds), H5Sclose);
  hsize_t dims[2] = {0, 0};
  int rank = H5_CHECK(H5Sget_simple_extent_dims(space, dims, nullptr));
  return rank == 0 ? 1 : dims[0];
}

hsize_t width_of(hid_t ds) {
  Id space = H5_OWN(H5Dget_space(ds), H5Sclose);
  hsize_t dims[2] = {0, 0};
  int rank = H5_CHECK(H5Sget_simple_extent_ndims(space));
  if (rank != 2) return 0;
  H5_CHECK(H5Sget_simple_extent_dims(space, dims, nullptr));
  return dims[1];
}

std::vector<double> read_doubles(hid_t ds, hsize_t n) {
  hsize_t width = width_of(ds);
  hsize_t w = width == 0 ? 1 : width;
  n = std::min(n, rows_of(ds));
  std::vector<double> out(n * w);
  if (n == 0) return out;
  Id fspace = H5_OWN(H5Dget_space(ds), H5Sclose);
  int rank = width == 0 ? 1 : 2;
  hsize_t start[2] = {0, 0};
  hsize_t count[2] = {n, width};
  H5_CHECK(H5Sselect_hyperslab(fspace, H5S_SELECT_SET, start, nullptr, count, nullptr));
  Id mspace = H5_OWN(H5Screate_simple(rank, count, nullptr), H5Sclose);
  H5_CHECK(H5Dread(ds, H5T_NATIVE_DOUBLE, mspace, fspace, H5P_DEFAULT, out.data()));
  return out;
}

std::vector<std::string> read_strings(hid_t ds) {
  hsize_t n = rows_of(ds);
  std::vector<std::string> out;
  if (n == 0) return out;
  Id type = H5_OWN(H5Dget_type(ds), H5Tclose);
  if (H5_CHECK(H5Tis_variable_str(type)) > 0) {
    Id mt = utf8_vl_string();
    std::vector<char*> ptrs(n, nullptr);
    H5_CHECK(H5Dread(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()));
    for (char* p : ptrs) out.emplace_back(p ? p : "");
    Id space = H5_OWN(H5Dget_space(ds), H5Sclose);
    H5Dvlen_reclaim(mt, space, H5P_DEFAULT, ptrs.data());
  } else {
    std::size_t sz = H5Tget_size(type);
    std::vector<char> buf(n * sz);
    H5_CHECK(H5Dread(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()));
    for (hsize_t i = 0; i < n; ++i) {
      std::string s(buf.data() + i * sz, sz);
      s.resize(std::strlen(s.c_str()));
      out.push_back(s);
    }
  }
  return out;
}

void write_strings(hid_t loc, const std::string& name, const std::vector<std::string>& values) {
  Id type = utf8_vl_string();
  hsize_t n = values.size();
  Id space = H5_OWN(H5Screate_simple(1, &n, nullptr), H5Sclose);
  Id ds = H5_OWN(H5Dcreate2(loc, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  std::vector<const char*> ptrs;
  for (const auto& v : values) ptrs.push_back(v.c_str());
  if (n) H5_CHECK(H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, ptrs.data()));
}

void write_fixed_strings(hid_t loc, const std::string& name, const std::vector<std::string>& values) {
  std::size_t len = 1;
  for (const auto& v : values) len = std::max(len, v.size());
  Id type = H5_OWN(H5Tcopy(H5T_C_S1), H5Tclose);
  H5_CHECK(H5Tset_size(type, len));
  H5_CHECK(H5Tset_strpad(type, H5T_STR_NULLPAD));
  H5_CHECK(H5Tset_cset(type, H5T_CSET_UTF8));
  hsize_t n = values.size();
  Id space = H5_OWN(H5Screate_simple(1, &n, nullptr), H5Sclose);
  Id dcpl = n ? checksummed_chunks(1, &n) : H5_OWN(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  Id ds = H5_OWN(H5Dcreate2(loc, name.c_str(), type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose);
  std::string buf(len * values.size(), '\0');
  for (std::size_t k = 0; k < values.size(); ++k) buf.replace(k * len, values[k].size(), values[k]);
  if (n) H5_CHECK(H5Dwrite(ds, type, H5S_ALL, H5S_ALL, H5P_DEFAULT, buf.data()));
}

namespace {
// A 1-D dataset of n numbers: stored as `file_type`, given in memory as `mem_type`.
void write_numbers(hid_t loc, const std::string& name, hid_t file_type, hid_t mem_type, hsize_t n,
                   const void* data) {
  Id space = H5_OWN(H5Screate_simple(1, &n, nullptr), H5Sclose);
  // Chunked (one chunk) only for the checksum: a filter needs chunks, and an empty one has none.
  Id dcpl = n ? checksummed_chunks(1, &n) : H5_OWN(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  Id ds = H5_OWN(H5Dcreate2(loc, name.c_str(), file_type, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose);
  if (n) H5_CHECK(H5Dwrite(ds, mem_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, data));
}
}  // namespace

void write_doubles(hid_t loc, const std::string& name, const std::vector<double>& values) {
  write_numbers(loc, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, values.size(), values.data());
}

void write_int64s(hid_t loc, const std::string& name, const std::vector<std::int64_t>& values) {
  write_numbers(loc, name, H5T_STD_I64LE, H5T_NATIVE_INT64, values.size(), values.data());
}

namespace {
herr_t collect_name(hid_t, const char* name, const H5L_info_t*, void* data) {
  static_cast<std::vector<std::string>*>(data)->emplace_back(name);
  return 0;
}
}  // namespace

std::vector<std::string> list_group(hid_t group) {
  std::vector<std::string> names;
  hsize_t idx = 0;
  H5_CHECK(H5Literate(group, H5_INDEX_NAME, H5_ITER_INC, &idx, collect_name, &names));
  return names;
}

Id latest_fapl() {
  Id fapl = H5_OWN(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5_CHECK(H5Pset_libver_bounds(fapl, H5F_LIBVER_LATEST, H5F_LIBVER_LATEST));
  return fapl;
}

Id writer_fapl() {
  Id fapl = latest_fapl();
  H5_CHECK(H5Pset_file_locking(fapl, /*use_file_locking=*/false, /*ignore_when_disabled=*/true));
  return fapl;
}

Id create_in_memory(bool latest) {
  Id fapl = latest ? latest_fapl() : H5_OWN(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5_CHECK(H5Pset_fapl_core(fapl, std::size_t{64} * 1024, 0));
  // The name is never opened (no backing store); it only has to be unique among open files.
  static unsigned serial = 0;
  const std::string name = "gridrun-memory-" + std::to_string(getpid()) + "-" + std::to_string(++serial);
  return H5_OWN(H5Fcreate(name.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl), H5Fclose);
}

std::string file_image(hid_t file) {
  H5_CHECK(H5Fflush(file, H5F_SCOPE_GLOBAL));
  const ssize_t n = H5_CHECK(H5Fget_file_image(file, nullptr, 0));
  std::string bytes(static_cast<std::size_t>(n), '\0');
  H5_CHECK(H5Fget_file_image(file, bytes.data(), bytes.size()));
  // libhdf5 1.10 clears a version 2/3 superblock's "open for writing" flags in the image but
  // leaves its checksum as it was, so the image would not open ("incorrect metadata checksum"):
  // the checksum is redone here with the library's own function (HDF5 file format spec,
  // superblock versions 2 and 3: 12 bytes, 4 addresses, then the checksum of all before it).
  const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
  if (bytes.size() >= 12 && u[8] >= 2) {
    const std::size_t sum_at = 12 + 4 * static_cast<std::size_t>(u[9]);  // 4 addresses of u[9] bytes
    if (bytes.size() >= sum_at + 4) {
      const std::uint32_t sum = H5_checksum_metadata(bytes.data(), sum_at, 0);
      for (int k = 0; k < 4; ++k) bytes[sum_at + k] = static_cast<char>((sum >> (8 * k)) & 0xff);
    }
  }
  return bytes;
}

void WriteFile::close(const char* file, int line) {
  if (!id_.valid()) return;
  if (H5Fflush(id_, H5F_SCOPE_GLOBAL) < 0) {
    const std::string msg = failure_text("H5Fflush", file, line, last_error_message());
    discard();
    throw Error(msg);
  }
  // A close still writes (superblock flags, end of file) and can fail at a full disk; the id is
  // gone either way (close_checked lets go of it before the call; see kNoExitHandler).
  id_.close_checked(file, line);
}

namespace {
// An anonymous memory file holding a copy of fd's bytes (HDF5 reads metadata back while it closes,
// so the copy must start as the disk file is), or -1.
int memory_copy_of(int fd) {
  const int mem = memfd_create("gridrun-discarded-hdf5", MFD_CLOEXEC);
  if (mem < 0) return -1;
  std::vector<char> buf(1 << 20);
  off_t at = 0;
  for (;;) {
    const ssize_t n = pread(fd, buf.data(), buf.size(), at);
    if (n == 0) return mem;
    if (n < 0 || pwrite(mem, buf.data(), static_cast<std::size_t>(n), at) != n) break;
    at += n;
  }
  ::close(mem);
  return -1;
}
}  // namespace

void WriteFile::discard() noexcept {
  if (!id_.valid()) return;
  void* handle = nullptr;
  Id fapl(H5Fget_access_plist(id_), H5Pclose);
  if (fapl.valid() && H5Pget_driver(fapl) == H5FD_SEC2 && H5Fget_vfd_handle(id_, fapl, &handle) >= 0 &&
      handle) {
    const int fd = *static_cast<int*>(handle);
    const int mem = memory_copy_of(fd);
    if (mem >= 0) {
      dup2(mem, fd);
      ::close(mem);
    }
  }
  fapl.reset();
  id_.reset();
  H5Eclear2(H5E_DEFAULT);
}

}  // namespace gridrun::h5
