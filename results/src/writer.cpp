// JobWriter over HDF5 1.10 SWMR: the whole layout is created before H5Fstart_swmr_write (objects
// created later stay invisible to SWMR readers), appends only buffer rows, and flush() extends
// every column of a table, writes the rows, flushes the file, then writes the committed-rows
// counter and flushes again. Readers trust `rows`, so a crash between the two flushes loses at
// most the rows of that flush, never returns torn rows.
//
// Every table's datasets come from its descriptor list (columns.hpp): TypedTable creates them and
// appends a row member by member, so a column's name and value cannot drift apart.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <type_traits>
#include <variant>

#include "attempts.hpp"
#include "columns.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/host.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/h5/h5.hpp"
#include "gridrun/results/summary.hpp"
#include "gridrun/results/writer.hpp"
#include "gridrun/run/run_dir.hpp"
#include "journal.hpp"
#include "reading.hpp"

namespace gridrun::results {

namespace fs = std::filesystem;

namespace {

using detail::Columns;
using detail::Width;
using h5::Id;
constexpr hsize_t kChunkRows = 256;

// One dataset of an extendible table with its pending (unflushed) values.
struct PendingColumn {
  std::string name;
  bool is_int = false;
  hsize_t width = 0;  // 0 = 1-D
  Id ds;
  std::vector<double> f;  // pending values, row-major when width > 0
  std::vector<std::int64_t> i;
};

// One of /steps, /epochs, /util as the SWMR writer sees it: datasets created (or reopened) from
// the table's descriptor list, rows buffered per column, flushed in two phases (see top).
class SwmrTable {
 public:
  SwmrTable(std::string name, std::vector<PendingColumn> cols)
      : name_(std::move(name)), cols_(std::move(cols)) {}

  void create(hid_t file) {
    group_ = H5_OWN(H5Gcreate2(file, name_.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    for (auto& c : cols_)
      c.ds = h5::create_column(group_, c.name, c.is_int ? H5T_STD_I64LE : H5T_IEEE_F64LE, c.width,
                               c.width > 0 ? std::max<hsize_t>(1, kChunkRows / c.width) : kChunkRows);
    hsize_t one = 1, maxone = 1;
    Id space = H5_OWN(H5Screate_simple(1, &one, &maxone), H5Sclose);
    Id dcpl = h5::checksummed_chunks(1, &one);
    rows_ds_ =
        H5_OWN(H5Dcreate2(group_, "rows", H5T_STD_I64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT), H5Dclose);
    write_counter();
  }
  void open(hid_t file) {
    group_ = H5_OWN(H5Gopen2(file, name_.c_str(), H5P_DEFAULT), H5Gclose);
    for (auto& c : cols_) {
      if (!h5::exists(group_, c.name))
        throw std::runtime_error("/" + name_ + "/" + c.name + " missing (not written by this schema)");
      c.ds = H5_OWN(H5Dopen2(group_, c.name.c_str(), H5P_DEFAULT), H5Dclose);
    }
    rows_ds_ = H5_OWN(H5Dopen2(group_, "rows", H5P_DEFAULT), H5Dclose);
    std::int64_t n = 0;
    H5_CHECK(H5Dread(rows_ds_, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &n));
    committed_ = static_cast<hsize_t>(n);
    for (auto& c : cols_) committed_ = std::min(committed_, h5::rows_of(c.ds));
  }
  void write_counter() {
    std::int64_t n = static_cast<std::int64_t>(committed_);
    H5_CHECK(H5Dwrite(rows_ds_, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &n));
  }
  // Cuts every column to `rows` (resume) and records it.
  void truncate(hsize_t rows) {
    committed_ = std::min(committed_, rows);
    for (auto& c : cols_) {
      hsize_t size[2] = {committed_, c.width};
      H5_CHECK(H5Dset_extent(c.ds, size));
    }
    write_counter();
  }
  // Phase 1 of a flush: extend all columns and write the pending rows.
  bool write_pending() {
    if (pending_ == 0) return false;
    for (auto& c : cols_) {
      if (c.is_int)
        h5::write_rows(c.ds, H5T_NATIVE_INT64, committed_, pending_, c.width, c.i.data());
      else
        h5::write_rows(c.ds, H5T_NATIVE_DOUBLE, committed_, pending_, c.width, c.f.data());
      c.f.clear();
      c.i.clear();
    }
    committed_ += pending_;
    pending_ = 0;
    return true;
  }
  void close() {
    for (auto& c : cols_) c.ds.reset();
    rows_ds_.reset();
    group_.reset();
  }
  // The committed values of a column (resume reads step and epoch numbers).
  std::vector<double> committed_values(const std::string& column) const {
    for (const auto& c : cols_)
      if (c.name == column) return h5::read_doubles(c.ds, committed_);
    throw std::logic_error("/" + name_ + " has no column " + column);
  }
  hsize_t committed() const { return committed_; }
  hid_t group() const { return group_; }

 protected:
  std::string name_;
  std::vector<PendingColumn> cols_;
  Id group_;
  Id rows_ds_;  // [1] int64: committed rows, written last
  hsize_t committed_ = 0;
  hsize_t pending_ = 0;
};

// The widths of the per-rank and per-GPU columns of one job's file.
struct Dims {
  hsize_t ranks = 1, gpus = 0;
  hsize_t of(Width w) const { return w == Width::Ranks ? ranks : w == Width::Gpus ? gpus : 0; }
  // Per-GPU columns exist only in files of GPU jobs.
  bool present(Width w) const { return w != Width::Gpus || gpus > 0; }
};

// A SwmrTable whose rows are `Row`s, appended through the table's descriptor list.
template <class Row>
class TypedTable : public SwmrTable {
 public:
  TypedTable(std::string name, const Columns<Row>& cols, Dims dims)
      : SwmrTable(std::move(name), pending_columns(cols, dims)), descs_(present(cols, dims)) {}

  void append(const Row& row) {
    // Every width is checked before any value is buffered: a rejected row leaves no trace.
    for (std::size_t k = 0; k < descs_.size(); ++k)
      if (auto* v = std::get_if<std::vector<double> Row::*>(&descs_[k].field);
          v && (row.*(*v)).size() != cols_[k].width)
        throw std::invalid_argument("JobWriter: /" + name_ + "/" + cols_[k].name + " has " +
                                    std::to_string((row.*(*v)).size()) +
                                    " values, the file was created for " + std::to_string(cols_[k].width));
    for (std::size_t k = 0; k < descs_.size(); ++k) {
      PendingColumn& c = cols_[k];
      std::visit(
          [&](auto member) {
            using T = std::decay_t<decltype(row.*member)>;
            if constexpr (std::is_same_v<T, std::int64_t>)
              c.i.push_back(row.*member);
            else if constexpr (std::is_same_v<T, double>)
              c.f.push_back(row.*member);
            else if constexpr (std::is_same_v<T, std::vector<double>>)
              c.f.insert(c.f.end(), (row.*member).begin(), (row.*member).end());
          },
          descs_[k].field);
    }
    ++pending_;
  }

 private:
  static Columns<Row> present(const Columns<Row>& cols, Dims dims) {
    Columns<Row> out;
    for (const auto& c : cols)
      if (dims.present(c.width)) out.push_back(c);
    return out;
  }
  static std::vector<PendingColumn> pending_columns(const Columns<Row>& cols, Dims dims) {
    std::vector<PendingColumn> out;
    for (const auto& c : present(cols, dims)) {
      if (std::holds_alternative<std::string Row::*>(c.field))
        throw std::logic_error(std::string("extendible column ") + c.name + " cannot hold strings");
      out.push_back(PendingColumn{
          c.name, std::holds_alternative<std::int64_t Row::*>(c.field), dims.of(c.width), Id(), {}, {}});
    }
    return out;
  }

  Columns<Row> descs_;  // parallel to cols_
};

// The SWMR writer of one job file. Methods take mu_ and convert HDF5 failures into errors that
// name the file; the two-phase flush and the close/reopen at finish() are described at the top.
class H5JobWriter final : public JobWriter {
 public:
  H5JobWriter(const std::string& dir, const JobFileInfo& info);
  ~H5JobWriter() override;

  void append_step(const StepRow& r) override { append(steps_, r); }
  void append_epoch(const EpochRow& r) override { append(epochs_, r); }
  void append_util(const UtilRow& r) override { append(util_, r); }
  void flush() override;
  void finish(Status status, const std::string& exit_reason, const Summary& summary) override;
  void set_profile(const std::vector<OpProfile>& ops) override;
  std::string path() const override;

 private:
  template <class Row>
  void append(TypedTable<Row>& table, const Row& r) {
    std::lock_guard<std::mutex> lock(mu_);
    check_open();
    table.append(r);
    maybe_auto_flush();
  }
  // After a failed write (ENOSPC, EIO) the file is let go of without another byte to disk and the
  // writer refuses further work: the .partial keeps what reached the disk, and the run reader
  // decides whether it is readable. Returns the error to throw, naming the file.
  std::runtime_error abandon(const std::exception& why);
  std::vector<SwmrTable*> tables() { return {&steps_, &epochs_, &util_}; }
  void write_root_attrs(hid_t file);
  void create_fresh();
  void reopen();
  void move_damaged_aside(bool renamed, const std::exception& why);
  void reopen_partial();
  Attempt this_attempt() const;
  void check_resumable();
  void drop_redone_rows();
  void check_open() const;
  void maybe_auto_flush();
  void flush_locked();
  // Writes /summary and returns the job as the file now holds it (its attributes and summary,
  // read for the derived figures), for the journal's record.
  JobData write_summary(hid_t file, const Summary& summary);
  void write_profile(hid_t file) const;
  void close_tables();
  void close_all();

  JobFileInfo info_;
  Dims dims_;
  std::string partial_, final_;
  mutable std::mutex mu_;
  h5::WriteFile file_;
  TypedTable<StepRow> steps_;
  TypedTable<EpochRow> epochs_;
  TypedTable<UtilRow> util_;
  bool finished_ = false;
  std::string broken_;  // why an earlier write failed (the file was let go of), else empty
  std::vector<OpProfile> profile_;
  bool has_profile_ = false;
  std::chrono::steady_clock::time_point last_flush_;
};

Dims dims_of(const JobFileInfo& info) {
  if (info.id.empty()) throw std::invalid_argument("JobWriter: empty job id");
  if (info.ranks < 1) throw std::invalid_argument("JobWriter: ranks must be >= 1");
  if (info.gpus < 0) throw std::invalid_argument("JobWriter: gpus must be >= 0");
  return Dims{static_cast<hsize_t>(info.ranks), static_cast<hsize_t>(info.gpus)};
}

H5JobWriter::H5JobWriter(const std::string& dir, const JobFileInfo& info)
    : info_(info),
      dims_(dims_of(info)),
      steps_("steps", detail::step_columns(), dims_),
      epochs_("epochs", detail::epoch_columns(), dims_),
      util_("util", detail::util_columns(), dims_) {
  fs::create_directories(dir);
  partial_ = (fs::path(dir) / run::RunDir::partial_file_name(info.id)).string();
  final_ = (fs::path(dir) / run::RunDir::result_file_name(info.id)).string();
  h5::Quiet quiet;
  try {
    bool resume = info.resume_from_step > 0 && (fs::exists(partial_) || fs::exists(final_));
    if (resume)
      reopen();
    else
      create_fresh();
    H5_CHECK(H5Fstart_swmr_write(file_));
  } catch (const std::invalid_argument&) {
    close_tables();
    file_.discard();
    throw;
  } catch (const std::exception& e) {
    throw abandon(e);
  }
  last_flush_ = std::chrono::steady_clock::now();
}

H5JobWriter::~H5JobWriter() {
  // No finish(): leave a readable .partial (status "running") with every appended row.
  if (finished_ || !file_.valid()) return;
  std::lock_guard<std::mutex> lock(mu_);
  h5::Quiet quiet;
  try {
    flush_locked();
    close_all();
  } catch (const std::exception& e) {
    // A destructor must not throw; rows flushed before stay readable.
    abandon(e);
  }
}

std::runtime_error H5JobWriter::abandon(const std::exception& why) {
  file_.discard();  // first: the tables' closes below then flush into memory, not the disk
  close_tables();
  broken_ = why.what();
  return std::runtime_error(partial_ + ": " + broken_);
}

void H5JobWriter::flush() {
  std::lock_guard<std::mutex> lock(mu_);
  check_open();
  h5::Quiet quiet;
  try {
    flush_locked();
  } catch (const std::exception& e) {
    throw abandon(e);
  }
}

void H5JobWriter::finish(Status status, const std::string& exit_reason, const Summary& summary) {
  std::lock_guard<std::mutex> lock(mu_);
  check_open();
  h5::Quiet quiet;
  try {
    try {
      flush_locked();
      close_all();
    } catch (const std::exception& e) {
      finished_ = true;
      throw abandon(e);
    }
    // SWMR forbids attribute changes and new objects: reopen normally for the final touches.
    Id fapl = h5::writer_fapl();
    h5::WriteFile file(H5_OWN(H5Fopen(partial_.c_str(), H5F_ACC_RDWR, fapl), H5Fclose));
    h5::write_attr(file, "status", to_string(status));
    h5::write_attr(file, "exit_reason", exit_reason);
    h5::write_attr(file, "end_time", base::iso_now());
    h5::write_attr(file, "end_unix", base::unix_now());
    JobData written = write_summary(file, summary);
    if (has_profile_) write_profile(file);
    file.close(__FILE__, __LINE__);
    base::rename_durable(partial_, final_);
    finished_ = true;
    written.path = final_;
    written.partial = false;
    detail::journal_finished_file(final_, std::move(written));  // for the first reader (journal.hpp)
  } catch (const std::runtime_error& e) {
    finished_ = true;
    if (std::string(e.what()).rfind(partial_ + ": ", 0) == 0) throw;
    throw std::runtime_error(partial_ + ": " + e.what());
  } catch (const std::exception& e) {
    finished_ = true;
    throw std::runtime_error(partial_ + ": " + e.what());
  }
}

// `/summary`: the figures derived from the file's own rows, the caller's winning.
JobData H5JobWriter::write_summary(hid_t file, const Summary& summary) {
  JobData job = detail::read_open_job(file, partial_, ReadOptions{});
  Summary all = derive_summary(job);
  for (const auto& [k, v] : summary) all[k] = v;
  Id group = H5_OWN(H5Gopen2(file, "summary", H5P_DEFAULT), H5Gclose);
  for (const auto& name : h5::list_group(group)) H5_CHECK(H5Ldelete(group, name.c_str(), H5P_DEFAULT));
  for (const auto& [k, v] : all) h5::write_doubles(group, k, {v});
  job.summary = std::move(all);
  return job;
}

void H5JobWriter::set_profile(const std::vector<OpProfile>& ops) {
  std::lock_guard<std::mutex> lock(mu_);
  check_open();
  profile_ = ops;
  has_profile_ = true;
}

std::string H5JobWriter::path() const {
  std::lock_guard<std::mutex> lock(mu_);
  return finished_ ? final_ : partial_;
}

void H5JobWriter::write_root_attrs(hid_t file) {
  h5::write_attr(file, "id", info_.id);
  h5::write_attr(file, "run", info_.run);
  const jobs::Params by_name = jobs::from_struct(info_.params);  // a std::map: name order
  h5::write_attr(file, "params", jobs::canonical_json(by_name));
  h5::write_attr(file, "status", std::string("running"));
  h5::write_attr(file, "exit_reason", std::string());
  h5::write_attr(file, "end_time", std::string());
  h5::write_attr(file, "schema_version", static_cast<std::int64_t>(kSchemaVersion));
  h5::write_attr(file, "gridrun_version", std::string(GRIDRUN_VERSION));
  h5::write_attr(file, "git_commit", std::string(GRIDRUN_GIT_COMMIT));
  h5::write_attr(file, "hdf5_version", std::string(H5_VERS_INFO));
  h5::write_attr(file, "hostname", base::hostname());
  h5::write_attr(file, "cpu_model", base::cpu_model());
  h5::write_attr(file, "cpu_cores",
                 static_cast<std::int64_t>(std::max(1u, std::thread::hardware_concurrency())));
  h5::write_attr(file, "ranks", static_cast<std::int64_t>(info_.ranks));
  h5::write_attr(file, "gpus", static_cast<std::int64_t>(info_.gpus));
  // Typed copies of the parameters, so h5py users can filter without parsing JSON.
  for (const auto& [k, v] : by_name) {
    const std::string name = "param." + k;
    if (auto* b = std::get_if<bool>(&v))
      h5::write_attr(file, name, static_cast<std::int64_t>(*b));
    else if (auto* i = std::get_if<std::int64_t>(&v))
      h5::write_attr(file, name, *i);
    else if (auto* d = std::get_if<double>(&v))
      h5::write_attr(file, name, *d);
    else
      h5::write_attr(file, name, std::get<std::string>(v));
  }
  for (const auto& [k, v] : info_.str_attrs) h5::write_attr(file, k, v);
  for (const auto& [k, v] : info_.int_attrs) h5::write_attr(file, k, v);
  for (const auto& [k, v] : info_.float_attrs) h5::write_attr(file, k, v);
}

Attempt H5JobWriter::this_attempt() const {
  Attempt a;
  a.started_at = base::iso_now();
  a.hostname = info_.attempt_hostname;
  a.hostnames = info_.attempt_hostnames;
  a.batch_id = info_.attempt_batch_id;
  a.sitting = info_.attempt_sitting;
  a.resumed_from_step = info_.resume_from_step;
  a.restart_count = info_.attempt_restart_count;
  return a;
}

// The whole layout is made in memory and written by base::write_file_atomic, then opened on disk
// (h5.hpp: an H5Fcreate that fails at a full disk leaves the library unable to exit cleanly).
void H5JobWriter::create_fresh() {
  std::error_code ec;
  fs::remove(partial_, ec);
  std::string image;
  {
    Id mem = h5::create_in_memory(true);
    write_root_attrs(mem);
    h5::write_attr(mem, "start_time", base::iso_now());
    h5::write_attr(mem, "start_unix", base::unix_now());
    detail::append_attempt(mem, this_attempt());
    for (SwmrTable* t : tables()) t->create(mem);
    if (info_.gpus == 0)
      h5::write_attr(util_.group(), "gpu_absent_reason",
                     info_.gpu_absent_reason.empty() ? std::string("cpu job") : info_.gpu_absent_reason);
    Id summary = H5_OWN(H5Gcreate2(mem, "summary", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    close_tables();
    image = h5::file_image(mem);
  }
  base::write_file_atomic(partial_, image);
  Id fapl = h5::writer_fapl();
  file_ = h5::WriteFile(H5_OWN(H5Fopen(partial_.c_str(), H5F_ACC_RDWR, fapl), H5Fclose));
  for (SwmrTable* t : tables()) t->open(file_);
}

void H5JobWriter::reopen() {
  bool renamed = false;
  if (!fs::exists(partial_)) {
    std::error_code ec;
    fs::rename(final_, partial_, ec);
    if (ec) throw std::runtime_error("rename " + final_ + " back to .partial: " + ec.message());
    renamed = true;
  }
  try {
    reopen_partial();
  } catch (const std::invalid_argument&) {
    // Leave a finished file as it was: refused resumes must not half-change results.
    close_tables();
    try {
      file_.close(__FILE__, __LINE__);  // clears the "open for writing" flags the open set
    } catch (const std::exception&) {
      // Let go of (discarded); the refusal is the error to report.
    }
    if (renamed) {
      std::error_code ec;
      fs::rename(partial_, final_, ec);
    }
    throw;
  } catch (const std::exception& e) {
    move_damaged_aside(renamed, e);
  }
}

// Damaged (truncated, corrupted): never trusted, never fatal. The file moves aside and a fresh
// one starts at the resumed step; the rows before it are lost (`gridrun run` restarts such a job
// from scratch instead, so this is the path of a hand-started --resume).
void H5JobWriter::move_damaged_aside(bool renamed, const std::exception& why) {
  file_.discard();  // nothing more is written to a damaged file
  close_tables();
  const std::string to = base::quarantine(partial_);
  if (to.empty()) throw std::runtime_error("damaged (" + std::string(why.what()) + "), cannot move it aside");
  std::fprintf(stderr,
               "gridrun-train: warning: %s is damaged (%s); moved to %s, starting a new results "
               "file at step %lld\n",
               (renamed ? final_ : partial_).c_str(), why.what(), to.c_str(),
               static_cast<long long>(info_.resume_from_step));
  create_fresh();
  h5::write_attr(file_, "resumed_from_step", info_.resume_from_step);
  H5_CHECK(H5Fflush(file_, H5F_SCOPE_GLOBAL));
}

void H5JobWriter::reopen_partial() {
  // A writer killed while in SWMR mode leaves the superblock marked "open for writing";
  // "clear_status_flags" is the (documented-in-source) fapl property h5clear -s uses.
  Id fapl = h5::writer_fapl();
  hbool_t clear = 1;
  H5_CHECK(H5Pset(fapl, "clear_status_flags", &clear));
  file_ = h5::WriteFile(H5_OWN(H5Fopen(partial_.c_str(), H5F_ACC_RDWR, fapl), H5Fclose));
  check_resumable();
  for (SwmrTable* t : tables()) t->open(file_);
  drop_redone_rows();
  write_root_attrs(file_);
  h5::write_attr(file_, "resumed_from_step", info_.resume_from_step);
  detail::append_attempt(file_, this_attempt());
  H5_CHECK(H5Fflush(file_, H5F_SCOPE_GLOBAL));
}

void H5JobWriter::check_resumable() {
  auto attrs = h5::read_attrs(file_);
  auto get_int = [&](const char* n) -> std::int64_t {
    for (auto& [k, v] : attrs)
      if (k == n && std::holds_alternative<std::int64_t>(v)) return std::get<std::int64_t>(v);
    return -1;
  };
  if (get_int("ranks") != info_.ranks || get_int("gpus") != info_.gpus)
    throw std::invalid_argument(
        partial_ + ": cannot resume: file has ranks=" + std::to_string(get_int("ranks")) +
        " gpus=" + std::to_string(get_int("gpus")) + ", job has ranks=" + std::to_string(info_.ranks) +
        " gpus=" + std::to_string(info_.gpus));
}

// Keeps steps before the checkpoint, and epochs that ended before the first redone step.
void H5JobWriter::drop_redone_rows() {
  std::vector<double> step = steps_.committed_values("step");
  std::vector<double> epoch = steps_.committed_values("epoch");
  hsize_t keep = 0;
  while (keep < step.size() && step[keep] < static_cast<double>(info_.resume_from_step)) ++keep;
  if (keep < step.size()) {
    double first_redone_epoch = epoch[keep];
    std::vector<double> ep = epochs_.committed_values("epoch");
    hsize_t keep_ep = 0;
    while (keep_ep < ep.size() && ep[keep_ep] < first_redone_epoch) ++keep_ep;
    epochs_.truncate(keep_ep);
  } else {
    epochs_.truncate(epochs_.committed());
  }
  steps_.truncate(keep);
  util_.truncate(util_.committed());
}

void H5JobWriter::check_open() const {
  if (finished_) throw std::logic_error("JobWriter: " + final_ + " already finished");
  if (!broken_.empty())
    throw std::runtime_error(partial_ + ": not written since an earlier write failed: " + broken_);
}

void H5JobWriter::maybe_auto_flush() {
  if (info_.flush_interval_s <= 0) return;
  auto now = std::chrono::steady_clock::now();
  if (std::chrono::duration<double>(now - last_flush_).count() < info_.flush_interval_s) return;
  h5::Quiet quiet;
  try {
    flush_locked();
  } catch (const std::exception& e) {
    throw abandon(e);
  }
}

void H5JobWriter::flush_locked() {
  bool wrote = false;
  for (SwmrTable* t : tables()) wrote |= t->write_pending();
  last_flush_ = std::chrono::steady_clock::now();
  if (!wrote) return;
  H5_CHECK(H5Fflush(file_, H5F_SCOPE_GLOBAL));  // rows reach the file before the counters
  for (SwmrTable* t : tables()) t->write_counter();
  H5_CHECK(H5Fflush(file_, H5F_SCOPE_GLOBAL));
}

void H5JobWriter::close_tables() {
  for (SwmrTable* t : tables()) t->close();
}

void H5JobWriter::close_all() {
  close_tables();
  file_.close(__FILE__, __LINE__);
}

// `/profile`: one 1-D dataset per column; names as fixed-length strings (the schema promised to
// readers of the published operator tables, which read them as plain bytes).
void H5JobWriter::write_profile(hid_t file) const {
  if (h5::exists(file, "profile")) H5_CHECK(H5Ldelete(file, "profile", H5P_DEFAULT));
  Id g = H5_OWN(H5Gcreate2(file, "profile", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
  detail::write_whole_table(g, detail::profile_columns(), profile_, detail::Strings::Fixed);
}

}  // namespace

std::unique_ptr<JobWriter> JobWriter::create(const std::string& dir, const JobFileInfo& info) {
  return std::make_unique<H5JobWriter>(dir, info);
}

std::string record_early_failure(const std::string& dir, const JobFileInfo& info, const std::string& why) {
  if (info.id.empty() || dir.empty()) return "no job id or results folder";
  std::error_code ec;
  const fs::path final_file = fs::path(dir) / run::RunDir::result_file_name(info.id);
  const fs::path partial_file = fs::path(dir) / run::RunDir::partial_file_name(info.id);
  if (fs::exists(final_file, ec) || fs::exists(partial_file, ec)) return "";
  const fs::path tmp = fs::path(dir) / ("." + info.id + ".failed." + std::to_string(::getpid()));
  std::string problem;
  try {
    JobFileInfo early = info;
    early.resume_from_step = 0;
    if (early.gpu_absent_reason.empty()) early.gpu_absent_reason = "the job failed before it started";
    auto w = JobWriter::create(tmp.string(), early);
    w->finish(Status::Failed, why, Summary{});
    w.reset();
    base::rename_durable((tmp / run::RunDir::result_file_name(info.id)).string(), final_file.string());
  } catch (const std::exception& e) {
    problem = "cannot record the failure in " + final_file.string() + ": " + e.what();
  }
  fs::remove_all(tmp, ec);
  return problem;
}

}  // namespace gridrun::results
