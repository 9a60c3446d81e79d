// Thin RAII layer over the HDF5 C API, shared by the results files (results/) and the user's data
// files (dataset/): the one place gridrun calls HDF5.
//
// Why: every hid_t must be closed exactly once even when an exception unwinds (a leaked file id
// keeps the file open and its lock held), and every failing call must say where it failed and
// what HDF5 said, instead of HDF5 printing its error stack to stderr behind our back. Numbered
// API calls (H5Dcreate2, H5Aiterate2, ...) are used explicitly because Debian's headers map the
// unnumbered names to the 1.8 API.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <stdexcept>
#include <string>
#include <variant>
#include <vector>

namespace gridrun::h5 {

// Thrown by H5_CHECK: "<file>:<line>: <call> failed: <innermost HDF5 message>".
class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The innermost message on this thread's HDF5 error stack (empty if none).
std::string last_error_message();
[[noreturn]] void fail(const char* expr, const char* file, int line);

template <class T>
T check(T v, const char* expr, const char* file, int line) {
  if (v < 0) fail(expr, file, line);
  return v;
}
#define H5_CHECK(expr) ::gridrun::h5::check((expr), #expr, __FILE__, __LINE__)

// Silences HDF5's automatic error printing on this thread while alive (we report errors ourselves).
class Quiet {
 public:
  Quiet();
  ~Quiet();
  Quiet(const Quiet&) = delete;
  Quiet& operator=(const Quiet&) = delete;

 private:
  H5E_auto2_t func_ = nullptr;
  void* data_ = nullptr;
};

// An owned hid_t closed with the matching H5*close on destruction. Move-only.
class Id {
 public:
  using Closer = herr_t (*)(hid_t);
  Id() = default;
  Id(hid_t id, Closer close) : id_(id), close_(close) {}
  Id(Id&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = H5I_INVALID_HID; }
  Id& operator=(Id&& o) noexcept {
    if (this != &o) {
      reset();
      id_ = o.id_;
      close_ = o.close_;
      o.id_ = H5I_INVALID_HID;
    }
    return *this;
  }
  Id(const Id&) = delete;
  Id& operator=(const Id&) = delete;
  ~Id() { reset(); }
  hid_t get() const { return id_; }
  operator hid_t() const { return id_; }  // NOLINT: ids are passed to C calls everywhere
  bool valid() const { return id_ >= 0; }
  void reset() {
    if (id_ >= 0 && close_) close_(id_);
    id_ = H5I_INVALID_HID;
  }
  // Closes now and reports a failure (a file close flushes, so it can fail).
  void close_checked(const char* file, int line);

 private:
  hid_t id_ = H5I_INVALID_HID;
  Closer close_ = nullptr;
};

#define H5_OWN(expr, closer) \
  ::gridrun::h5::Id(::gridrun::h5::check((expr), #expr, __FILE__, __LINE__), closer)

// --- attributes --------------------------------------------------------------------------------
using AttrValue = std::variant<std::int64_t, double, std::string>;

// Writes (replacing any existing attribute of that name) a scalar attribute. Strings are
// variable-length UTF-8 so h5py returns `str`.
void write_attr(hid_t loc, const std::string& name, const std::string& value);
void write_attr(hid_t loc, const std::string& name, std::int64_t value);
void write_attr(hid_t loc, const std::string& name, double value);
bool has_attr(hid_t loc, const std::string& name);
// Reads every scalar attribute of loc (integers, floats, strings); others are skipped.
std::vector<std::pair<std::string, AttrValue>> read_attrs(hid_t loc);

// --- datasets ----------------------------------------------------------------------------------
// Every dataset gridrun writes holding numbers is chunked with HDF5's Fletcher32 checksum filter
// (issue 45: one flipped bit changed a job's samples/s without a word). Reads check it (HDF5's
// default), so a damaged chunk fails the read, and the file is damaged like an unreadable one.
// Attributes and variable-length strings are not covered (docs/results.md, "Checksums").
Id checksummed_chunks(int rank, const hsize_t* chunk);
bool exists(hid_t loc, const std::string& path);
// An extendible chunked dataset of `type`: 1-D when width == 0, else [rows x width].
Id create_column(hid_t group, const std::string& name, hid_t type, hsize_t width, hsize_t chunk_rows);
// Extends ds to `rows_after` rows and writes `n` rows starting at `first` from `buf` (row-major).
void write_rows(hid_t ds, hid_t mem_type, hsize_t first, hsize_t n, hsize_t width, const void* buf);
// Current number of rows (first dimension) of a dataset.
hsize_t rows_of(hid_t ds);
// Second dimension (0 for 1-D).
hsize_t width_of(hid_t ds);
// Reads the first `n` rows of a numeric dataset as doubles (row-major when 2-D).
std::vector<double> read_doubles(hid_t ds, hsize_t n);
// Reads a 1-D dataset of strings (variable- or fixed-length).
std::vector<std::string> read_strings(hid_t ds);
// Creates a 1-D dataset of VL UTF-8 strings (not extendible, contiguous: no checksum).
void write_strings(hid_t loc, const std::string& name, const std::vector<std::string>& values);
// Creates a 1-D dataset of fixed-length (longest value, at least 1 byte) null-padded strings.
void write_fixed_strings(hid_t loc, const std::string& name, const std::vector<std::string>& values);
void write_doubles(hid_t loc, const std::string& name, const std::vector<double>& values);
void write_int64s(hid_t loc, const std::string& name, const std::vector<std::int64_t>& values);
// Names of the links in a group, in name order.
std::vector<std::string> list_group(hid_t group);

// File-access property list with libver bounds LATEST (needed for SWMR).
Id latest_fapl();
// latest_fapl() without HDF5's file lock, for the one process that writes a file (a job's rank 0).
// Why: a reader (a user's h5py, `gridrun status`, a test's probe) holds a shared flock while it
// has the file open, and the writer's H5Fopen(RDWR) then fails with EAGAIN: a job that had
// completed was lost to somebody looking at it (seen in slurm_hosts_sittings). The lock protects
// nothing here: each file has exactly one writer, and SWMR readers are built to read while it writes.
Id writer_fapl();

// --- files this process writes -----------------------------------------------------------------
// Why: libhdf5 1.10 cannot end a file whose writes failed (ENOSPC, EIO). H5Fcreate that fails
// while flushing leaves the half-made file inside the library, and an H5Fclose whose flush fails
// frees the file but keeps its id: at exit the library's handler loops on it or crashes (SIGSEGV,
// exit 139; issue 45). So files are made in memory and written by base::write_file_atomic (a full
// disk is our own clean error), and a file open for writing on disk is a WriteFile, which discards
// what HDF5 still holds unwritten before it lets the library close it after a failure.

// An empty file in memory (core driver, no backing store); `latest` for SWMR's libver bounds.
Id create_in_memory(bool latest);
// The bytes of an open file (superblock "open for writing" flags cleared), to write to disk.
std::string file_image(hid_t file);

// A file open for writing on disk: closed by close() (flush, then close; a failure throws), or
// else (an exception unwinds, close failed) discarded: the sec2 descriptor is pointed at an
// anonymous memory file, so that the library can flush into it and release every object; what
// already reached the disk stays as it was. Objects of the file still open (datasets, groups)
// close afterwards into the same memory file.
class WriteFile {
 public:
  WriteFile() = default;
  explicit WriteFile(Id id) : id_(std::move(id)) {}
  WriteFile(WriteFile&&) noexcept = default;
  WriteFile& operator=(WriteFile&& o) noexcept {
    if (this != &o) {
      discard();
      id_ = std::move(o.id_);
    }
    return *this;
  }
  ~WriteFile() { discard(); }
  hid_t get() const { return id_.get(); }
  operator hid_t() const { return id_.get(); }  // NOLINT: ids are passed to C calls everywhere
  bool valid() const { return id_.valid(); }
  // Flushes and closes; on a failure the file is discarded and the HDF5 error thrown.
  void close(const char* file, int line);
  // Lets go of the file without writing anything more to disk (no-op when closed).
  void discard() noexcept;

 private:
  Id id_;
};

}  // namespace gridrun::h5
