// JobWriter over HDF5 1.10 SWMR: the whole layout is created before H5Fstart_swmr_write (objects
// created later stay invisible to SWMR readers), appends only buffer rows, and flush() extends
// every column of a table, writes the rows, flushes the file, then writes the committed-rows
// counter and flushes again. Readers trust `rows`, so a crash between the two flushes loses at
// most the rows of that flush, never returns torn rows.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <stdexcept>
#include <thread>

#include "gridrun/results/reader.hpp"
#include "gridrun/results/writer.hpp"
#include "h5.hpp"
#include "internal.hpp"

namespace gridrun::results {

namespace fs = std::filesystem;

std::string to_string(Status s) {
  switch (s) {
    case Status::Running: return "running";
    case Status::Completed: return "completed";
    case Status::Failed: return "failed";
    case Status::Interrupted: return "interrupted";
    case Status::TargetReached: return "target_reached";
  }
  return "unknown";
}

namespace {

using h5::Id;
constexpr hsize_t kChunkRows = 256;

// One table (/steps, /epochs, /util): its columns with their pending (unflushed) rows.
struct Column {
  std::string name;
  bool is_int = false;
  hsize_t width = 0;                 // 0 = 1-D
  Id ds;
  std::vector<double> f;             // pending values, row-major when width > 0
  std::vector<std::int64_t> i;
};

struct Table {
  std::string name;
  Id group;
  std::vector<Column> cols;
  Id rows_ds;                        // [1] int64: committed rows, written last
  hsize_t committed = 0;
  hsize_t pending = 0;

  Column& add(const std::string& n, bool is_int, hsize_t width) {
    cols.push_back(Column{n, is_int, width, Id(), {}, {}});
    return cols.back();
  }
  void create(hid_t file) {
    group = H5_OWN(H5Gcreate2(file, name.c_str(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    for (auto& c : cols)
      c.ds = h5::create_column(group, c.name, c.is_int ? H5T_STD_I64LE : H5T_IEEE_F64LE, c.width,
                               c.width > 0 ? std::max<hsize_t>(1, kChunkRows / c.width) : kChunkRows);
    hsize_t one = 1, maxone = 1;
    Id space = H5_OWN(H5Screate_simple(1, &one, &maxone), H5Sclose);
    Id dcpl = H5_OWN(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
    H5_CHECK(H5Pset_chunk(dcpl, 1, &one));
    rows_ds = H5_OWN(H5Dcreate2(group, "rows", H5T_STD_I64LE, space, H5P_DEFAULT, dcpl, H5P_DEFAULT),
                     H5Dclose);
    write_counter();
  }
  void open(hid_t file) {
    group = H5_OWN(H5Gopen2(file, name.c_str(), H5P_DEFAULT), H5Gclose);
    for (auto& c : cols) {
      if (!h5::exists(group, c.name))
        throw std::runtime_error("/" + name + "/" + c.name + " missing (not written by this schema)");
      c.ds = H5_OWN(H5Dopen2(group, c.name.c_str(), H5P_DEFAULT), H5Dclose);
    }
    rows_ds = H5_OWN(H5Dopen2(group, "rows", H5P_DEFAULT), H5Dclose);
    std::int64_t n = 0;
    H5_CHECK(H5Dread(rows_ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &n));
    committed = static_cast<hsize_t>(n);
    for (auto& c : cols) committed = std::min(committed, h5::rows_of(c.ds));
  }
  void write_counter() {
    std::int64_t n = static_cast<std::int64_t>(committed);
    H5_CHECK(H5Dwrite(rows_ds, H5T_NATIVE_INT64, H5S_ALL, H5S_ALL, H5P_DEFAULT, &n));
  }
  // Cuts every column to `rows` (resume) and records it.
  void truncate(hsize_t rows) {
    committed = std::min(committed, rows);
    for (auto& c : cols) {
      hsize_t size[2] = {committed, c.width};
      H5_CHECK(H5Dset_extent(c.ds, size));
    }
    write_counter();
  }
  // Phase 1 of a flush: extend all columns and write the pending rows.
  bool write_pending() {
    if (pending == 0) return false;
    for (auto& c : cols) {
      if (c.is_int)
        h5::write_rows(c.ds, H5T_NATIVE_INT64, committed, pending, c.width, c.i.data());
      else
        h5::write_rows(c.ds, H5T_NATIVE_DOUBLE, committed, pending, c.width, c.f.data());
      c.f.clear();
      c.i.clear();
    }
    committed += pending;
    pending = 0;
    return true;
  }
  void close() {
    for (auto& c : cols) c.ds.reset();
    rows_ds.reset();
    group.reset();
  }
};

void push_fixed(Column& c, const std::vector<double>& v, const char* what) {
  if (v.size() != c.width)
    throw std::invalid_argument(std::string("JobWriter: ") + what + " has " +
                                std::to_string(v.size()) + " values, the file was created for " +
                                std::to_string(c.width));
  c.f.insert(c.f.end(), v.begin(), v.end());
}

}  // namespace

namespace detail {

std::string iso_now() {
  std::time_t t = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

std::string cpu_model() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("model name", 0) == 0) {
      auto colon = line.find(':');
      if (colon != std::string::npos) return detail::trim(line.substr(colon + 1));
    }
  }
  return "unknown";
}

std::string hostname() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown";
  return buf;
}

}  // namespace detail

namespace {

using detail::cpu_model;
using detail::hostname;
using detail::iso_now;

class H5JobWriter final : public JobWriter {
 public:
  H5JobWriter(const std::string& dir, const JobFileInfo& info) : info_(info) {
    if (info.id.empty()) throw std::invalid_argument("JobWriter: empty job id");
    if (info.ranks < 1) throw std::invalid_argument("JobWriter: ranks must be >= 1");
    if (info.gpus < 0) throw std::invalid_argument("JobWriter: gpus must be >= 0");
    fs::create_directories(dir);
    partial_ = (fs::path(dir) / (info.id + ".h5.partial")).string();
    final_ = (fs::path(dir) / (info.id + ".h5")).string();
    define_tables();
    h5::Quiet quiet;
    try {
      bool resume = info.resume_from_step > 0 && (fs::exists(partial_) || fs::exists(final_));
      if (resume)
        reopen();
      else
        create_fresh();
      H5_CHECK(H5Fstart_swmr_write(file_));
    } catch (const std::invalid_argument&) {
      throw;
    } catch (const std::exception& e) {
      throw std::runtime_error(partial_ + ": " + e.what());
    }
    last_flush_ = std::chrono::steady_clock::now();
  }

  ~H5JobWriter() override {
    // No finish(): leave a readable .partial (status "running") with every appended row.
    if (finished_ || !file_.valid()) return;
    try {
      std::lock_guard<std::mutex> lock(mu_);
      h5::Quiet quiet;
      flush_locked();
      close_all();
    } catch (...) {
      // A destructor must not throw; rows flushed before stay readable.
    }
  }

  void append_step(const StepRow& r) override {
    std::lock_guard<std::mutex> lock(mu_);
    check_open();
    auto& c = steps_.cols;
    c[0].i.push_back(r.step);
    c[1].i.push_back(r.epoch);
    c[2].f.push_back(r.wall_s);
    c[3].f.push_back(r.loss);
    c[4].f.push_back(r.samples_per_s);
    c[5].f.push_back(r.step_s);
    c[6].f.push_back(r.data_s);
    c[7].f.push_back(r.forward_s);
    c[8].f.push_back(r.backward_s);
    c[9].f.push_back(r.optimizer_s);
    c[10].f.push_back(r.comm_s);
    c[11].f.push_back(r.exposed_comm_s);
    push_fixed(c[12], r.rank_step_s, "StepRow::rank_step_s");
    ++steps_.pending;
    maybe_auto_flush();
  }

  void append_epoch(const EpochRow& r) override {
    std::lock_guard<std::mutex> lock(mu_);
    check_open();
    auto& c = epochs_.cols;
    c[0].i.push_back(r.epoch);
    c[1].f.push_back(r.train_loss);
    c[2].f.push_back(r.train_acc);
    c[3].f.push_back(r.test_loss);
    c[4].f.push_back(r.test_acc);
    c[5].f.push_back(r.epoch_s);
    c[6].f.push_back(r.wall_s);
    ++epochs_.pending;
    maybe_auto_flush();
  }

  void append_util(const UtilRow& r) override {
    std::lock_guard<std::mutex> lock(mu_);
    check_open();
    auto& c = util_.cols;
    c[0].f.push_back(r.time_s);
    push_fixed(c[1], r.rank_cpu_pct, "UtilRow::rank_cpu_pct");
    push_fixed(c[2], r.rank_rss_bytes, "UtilRow::rank_rss_bytes");
    c[3].f.push_back(r.node_cpu_pct);
    if (info_.gpus > 0) {
      push_fixed(c[4], r.gpu_util_pct, "UtilRow::gpu_util_pct");
      push_fixed(c[5], r.gpu_mem_bytes, "UtilRow::gpu_mem_bytes");
      push_fixed(c[6], r.gpu_power_w, "UtilRow::gpu_power_w");
      push_fixed(c[7], r.gpu_energy_j, "UtilRow::gpu_energy_j");
      push_fixed(c[8], r.gpu_temp_c, "UtilRow::gpu_temp_c");
      push_fixed(c[9], r.gpu_sm_mhz, "UtilRow::gpu_sm_mhz");
    }
    ++util_.pending;
    maybe_auto_flush();
  }

  void flush() override {
    std::lock_guard<std::mutex> lock(mu_);
    check_open();
    h5::Quiet quiet;
    try {
      flush_locked();
    } catch (const std::exception& e) {
      throw std::runtime_error(partial_ + ": " + e.what());
    }
  }

  void finish(Status status, const std::string& exit_reason, const Summary& summary) override {
    std::lock_guard<std::mutex> lock(mu_);
    check_open();
    h5::Quiet quiet;
    try {
      flush_locked();
      close_all();
      // SWMR forbids attribute changes and new objects: reopen normally for the final touches.
      Id fapl = h5::latest_fapl();
      Id file = H5_OWN(H5Fopen(partial_.c_str(), H5F_ACC_RDWR, fapl), H5Fclose);
      h5::write_attr(file, "status", to_string(status));
      h5::write_attr(file, "exit_reason", exit_reason);
      h5::write_attr(file, "end_time", iso_now());
      Summary all = derive_summary(detail::read_open_job(file, partial_, ReadOptions{}));
      for (const auto& [k, v] : summary) all[k] = v;
      Id group = H5_OWN(H5Gopen2(file, "summary", H5P_DEFAULT), H5Gclose);
      for (const auto& name : h5::list_group(group)) H5_CHECK(H5Ldelete(group, name.c_str(), H5P_DEFAULT));
      for (const auto& [k, v] : all) h5::write_doubles(group, k, {v});
      group.reset();
      if (has_profile_) write_profile(file);
      file.close_checked(__FILE__, __LINE__);
      std::error_code ec;
      fs::rename(partial_, final_, ec);
      if (ec) throw std::runtime_error("rename to " + final_ + ": " + ec.message());
      finished_ = true;
    } catch (const std::exception& e) {
      finished_ = true;
      throw std::runtime_error(partial_ + ": " + e.what());
    }
  }

  void set_profile(const std::vector<OpProfile>& ops) override {
    std::lock_guard<std::mutex> lock(mu_);
    check_open();
    profile_ = ops;
    has_profile_ = true;
  }

  std::string path() const override {
    std::lock_guard<std::mutex> lock(mu_);
    return finished_ ? final_ : partial_;
  }

 private:
  void define_tables() {
    steps_.name = "steps";
    steps_.add("step", true, 0);
    steps_.add("epoch", true, 0);
    for (const char* n : {"wall_s", "loss", "samples_per_s", "step_s", "data_s", "forward_s",
                          "backward_s", "optimizer_s", "comm_s", "exposed_comm_s"})
      steps_.add(n, false, 0);
    steps_.add("rank_step_s", false, static_cast<hsize_t>(info_.ranks));
    epochs_.name = "epochs";
    epochs_.add("epoch", true, 0);
    for (const char* n : {"train_loss", "train_acc", "test_loss", "test_acc", "epoch_s", "wall_s"})
      epochs_.add(n, false, 0);
    util_.name = "util";
    util_.add("time_s", false, 0);
    util_.add("rank_cpu_pct", false, static_cast<hsize_t>(info_.ranks));
    util_.add("rank_rss_bytes", false, static_cast<hsize_t>(info_.ranks));
    util_.add("node_cpu_pct", false, 0);
    if (info_.gpus > 0) {
      for (const char* n : {"gpu_util_pct", "gpu_mem_bytes", "gpu_power_w", "gpu_energy_j",
                            "gpu_temp_c", "gpu_sm_mhz"})
        util_.add(n, false, static_cast<hsize_t>(info_.gpus));
    }
  }

  void write_root_attrs(hid_t file) {
    h5::write_attr(file, "id", info_.id);
    h5::write_attr(file, "run", info_.run);
    h5::write_attr(file, "params", info_.params_json);
    h5::write_attr(file, "status", std::string("running"));
    h5::write_attr(file, "exit_reason", std::string());
    h5::write_attr(file, "end_time", std::string());
    h5::write_attr(file, "schema_version", static_cast<std::int64_t>(kSchemaVersion));
    h5::write_attr(file, "gridrun_version", std::string(GRIDRUN_VERSION));
    h5::write_attr(file, "git_commit", std::string(GRIDRUN_GIT_COMMIT));
    h5::write_attr(file, "hdf5_version", std::string(H5_VERS_INFO));
    h5::write_attr(file, "hostname", hostname());
    h5::write_attr(file, "cpu_model", cpu_model());
    h5::write_attr(file, "cpu_cores",
                   static_cast<std::int64_t>(std::max(1u, std::thread::hardware_concurrency())));
    h5::write_attr(file, "ranks", static_cast<std::int64_t>(info_.ranks));
    h5::write_attr(file, "gpus", static_cast<std::int64_t>(info_.gpus));
    // Typed copies of the parameters, so h5py users can filter without parsing JSON.
    if (!info_.params_json.empty()) {
      for (const auto& [k, v] : parse_params_json(info_.params_json)) {
        std::string name = "param." + k;
        if (auto* b = std::get_if<bool>(&v)) h5::write_attr(file, name, static_cast<std::int64_t>(*b));
        else if (auto* i = std::get_if<std::int64_t>(&v)) h5::write_attr(file, name, *i);
        else if (auto* d = std::get_if<double>(&v)) h5::write_attr(file, name, *d);
        else h5::write_attr(file, name, std::get<std::string>(v));
      }
    }
    for (const auto& [k, v] : info_.str_attrs) h5::write_attr(file, k, v);
    for (const auto& [k, v] : info_.int_attrs) h5::write_attr(file, k, v);
    for (const auto& [k, v] : info_.float_attrs) h5::write_attr(file, k, v);
  }

  void create_fresh() {
    std::error_code ec;
    fs::remove(partial_, ec);
    Id fapl = h5::latest_fapl();
    file_ = H5_OWN(H5Fcreate(partial_.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl), H5Fclose);
    write_root_attrs(file_);
    h5::write_attr(file_, "start_time", iso_now());
    steps_.create(file_);
    epochs_.create(file_);
    util_.create(file_);
    if (info_.gpus == 0)
      h5::write_attr(util_.group, "gpu_absent_reason",
                     info_.gpu_absent_reason.empty() ? std::string("cpu job") : info_.gpu_absent_reason);
    Id summary = H5_OWN(H5Gcreate2(file_, "summary", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    H5_CHECK(H5Fflush(file_, H5F_SCOPE_GLOBAL));
  }

  void reopen() {
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
      close_for_retry();
      if (renamed) {
        std::error_code ec;
        fs::rename(partial_, final_, ec);
      }
      throw;
    } catch (const std::exception& e) {
      // Damaged (truncated, corrupted): never trusted, never fatal. The file moves aside and a fresh
      // one starts at the resumed step; the rows before it are lost (`gridrun run` restarts such a
      // job from scratch instead, so this is the path of a hand-started --resume).
      close_for_retry();
      std::string to = partial_ + ".damaged";
      std::error_code ec;
      for (int i = 1; fs::exists(to, ec); ++i) to = partial_ + ".damaged" + std::to_string(i);
      fs::rename(partial_, to, ec);
      if (ec) throw std::runtime_error("damaged (" + std::string(e.what()) + "), cannot rename to " + to);
      std::fprintf(stderr, "gridrun-train: warning: %s is damaged (%s); moved to %s, starting a new results "
                   "file at step %lld\n", (renamed ? final_ : partial_).c_str(), e.what(), to.c_str(),
                   static_cast<long long>(info_.resume_from_step));
      create_fresh();
      h5::write_attr(file_, "resumed_from_step", info_.resume_from_step);
      H5_CHECK(H5Fflush(file_, H5F_SCOPE_GLOBAL));
    }
  }

  void close_for_retry() {
    steps_.close();
    epochs_.close();
    util_.close();
    file_.reset();
  }

  void reopen_partial() {
    // A writer killed while in SWMR mode leaves the superblock marked "open for writing";
    // "clear_status_flags" is the (documented-in-source) fapl property h5clear -s uses.
    Id fapl = h5::latest_fapl();
    hbool_t clear = 1;
    H5_CHECK(H5Pset(fapl, "clear_status_flags", &clear));
    file_ = H5_OWN(H5Fopen(partial_.c_str(), H5F_ACC_RDWR, fapl), H5Fclose);
    auto attrs = h5::read_attrs(file_);
    auto get_int = [&](const char* n) -> std::int64_t {
      for (auto& [k, v] : attrs)
        if (k == n && std::holds_alternative<std::int64_t>(v)) return std::get<std::int64_t>(v);
      return -1;
    };
    if (get_int("ranks") != info_.ranks || get_int("gpus") != info_.gpus)
      throw std::invalid_argument(partial_ + ": cannot resume: file has ranks=" +
                                  std::to_string(get_int("ranks")) + " gpus=" +
                                  std::to_string(get_int("gpus")) + ", job has ranks=" +
                                  std::to_string(info_.ranks) + " gpus=" + std::to_string(info_.gpus));
    steps_.open(file_);
    epochs_.open(file_);
    util_.open(file_);
    // Keep steps before the checkpoint, and epochs that ended before the first redone step.
    std::vector<double> step = h5::read_doubles(steps_.cols[0].ds, steps_.committed);
    std::vector<double> epoch = h5::read_doubles(steps_.cols[1].ds, steps_.committed);
    hsize_t keep = 0;
    while (keep < step.size() && step[keep] < static_cast<double>(info_.resume_from_step)) ++keep;
    if (keep < step.size()) {
      double first_redone_epoch = epoch[keep];
      std::vector<double> ep = h5::read_doubles(epochs_.cols[0].ds, epochs_.committed);
      hsize_t keep_ep = 0;
      while (keep_ep < ep.size() && ep[keep_ep] < first_redone_epoch) ++keep_ep;
      epochs_.truncate(keep_ep);
    } else {
      epochs_.truncate(epochs_.committed);
    }
    steps_.truncate(keep);
    util_.truncate(util_.committed);
    write_root_attrs(file_);
    h5::write_attr(file_, "resumed_from_step", info_.resume_from_step);
    H5_CHECK(H5Fflush(file_, H5F_SCOPE_GLOBAL));
  }

  void check_open() const {
    if (finished_) throw std::logic_error("JobWriter: " + final_ + " already finished");
  }

  void maybe_auto_flush() {
    if (info_.flush_interval_s <= 0) return;
    auto now = std::chrono::steady_clock::now();
    if (std::chrono::duration<double>(now - last_flush_).count() < info_.flush_interval_s) return;
    h5::Quiet quiet;
    flush_locked();
  }

  void flush_locked() {
    bool wrote = false;
    for (Table* t : {&steps_, &epochs_, &util_}) wrote |= t->write_pending();
    last_flush_ = std::chrono::steady_clock::now();
    if (!wrote) return;
    H5_CHECK(H5Fflush(file_, H5F_SCOPE_GLOBAL));   // rows reach the file before the counters
    for (Table* t : {&steps_, &epochs_, &util_}) t->write_counter();
    H5_CHECK(H5Fflush(file_, H5F_SCOPE_GLOBAL));
  }

  void close_all() {
    steps_.close();
    epochs_.close();
    util_.close();
    file_.close_checked(__FILE__, __LINE__);
  }

  JobFileInfo info_;
  std::string partial_, final_;
  mutable std::mutex mu_;
  Id file_;
  Table steps_, epochs_, util_;
  bool finished_ = false;
  std::vector<OpProfile> profile_;
  bool has_profile_ = false;

  // `/profile`: one 1-D dataset per column; names as fixed-length strings (the schema promised to
  // readers of the published operator tables, which read them as plain bytes).
  void write_profile(hid_t file) const {
    if (h5::exists(file, "profile")) H5_CHECK(H5Ldelete(file, "profile", H5P_DEFAULT));
    Id g = H5_OWN(H5Gcreate2(file, "profile", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
    std::vector<std::string> names;
    std::vector<std::int64_t> calls;
    std::vector<double> cols[4];
    for (const auto& op : profile_) {
      names.push_back(op.name);
      calls.push_back(op.calls);
      cols[0].push_back(op.self_cpu_us);
      cols[1].push_back(op.total_cpu_us);
      cols[2].push_back(op.self_device_us);
      cols[3].push_back(op.total_device_us);
    }
    h5::write_fixed_strings(g, "name", names);
    h5::write_int64s(g, "calls", calls);
    h5::write_doubles(g, "self_cpu_us", cols[0]);
    h5::write_doubles(g, "total_cpu_us", cols[1]);
    h5::write_doubles(g, "self_device_us", cols[2]);
    h5::write_doubles(g, "total_device_us", cols[3]);
  }
  std::chrono::steady_clock::time_point last_flush_;
};

}  // namespace

std::unique_ptr<JobWriter> JobWriter::create(const std::string& dir, const JobFileInfo& info) {
  return std::make_unique<H5JobWriter>(dir, info);
}

}  // namespace gridrun::results
