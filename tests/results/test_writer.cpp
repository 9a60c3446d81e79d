// JobWriter + reader round trips on real HDF5 files: layout, counter semantics, finish, resume.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>

#include <cmath>
#include <filesystem>
#include <map>
#include <vector>

#include "gridrun/h5/h5.hpp"
#include "gridrun/results/reader.hpp"
#include "gridrun/results/writer.hpp"
#include "test_util.hpp"

using namespace gridrun::results;
using gridrun::results::testing::TempDir;
namespace fs = std::filesystem;

namespace {

JobFileInfo info(const std::string& id, int ranks, int gpus) {
  JobFileInfo i;
  i.id = id;
  i.run = "unit";
  i.params = gridrun::jobs::job_params_from_json(
      "{\"lr\":0.1,\"model\":\"mlp\",\"overlap\":true,\"ranks\":" + std::to_string(ranks) +
      ",\"target_accuracy\":0.7,\"timing_warmup_steps\":2}");
  i.str_attrs["torch_version"] = "1.13.1";
  i.int_attrs["cpu_cores_used"] = 2;
  i.float_attrs["model_gflops"] = 1.5;
  i.ranks = ranks;
  i.gpus = gpus;
  i.gpu_absent_reason = gpus ? "" : "NVML not found";
  i.flush_interval_s = 0;
  return i;
}

StepRow step(std::int64_t i, int ranks, std::int64_t per_epoch = 5) {
  StepRow r;
  r.step = i;
  r.epoch = i / per_epoch;
  r.wall_s = 0.1 * static_cast<double>(i + 1);
  r.step_s = i < 2 ? 1.0 : 0.1 + 0.01 * static_cast<double>(i % 4);
  r.samples_per_s = 64 / r.step_s;
  r.comm_s = 0.02;
  r.exposed_comm_s = 0.01;
  r.rank_step_s.assign(ranks, r.step_s);
  return r;
}

// A job file's root attributes as libhdf5 reads them, without the reader's choices.
std::map<std::string, gridrun::h5::AttrValue> root_attrs(const std::string& path) {
  const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  EXPECT_GE(f, 0) << path;
  std::map<std::string, gridrun::h5::AttrValue> out;
  if (f < 0) return out;
  for (auto& [k, v] : gridrun::h5::read_attrs(f)) out[k] = v;
  H5Fclose(f);
  return out;
}

EpochRow epoch(std::int64_t e, double acc) {
  EpochRow r;
  r.epoch = e;
  r.test_acc = acc;
  r.wall_s = static_cast<double>(e + 1);
  return r;
}

}  // namespace

TEST(Writer, WritesLayoutAndReadsBack) {
  TempDir dir;
  auto w = JobWriter::create(dir.path(), info("job1", 2, 0));
  EXPECT_EQ(w->path(), dir / "job1.h5.partial");
  ASSERT_TRUE(fs::exists(dir / "job1.h5.partial"));
  for (int i = 0; i < 10; ++i) w->append_step(step(i, 2));
  w->append_epoch(epoch(0, 0.6));
  w->append_epoch(epoch(1, 0.75));
  UtilRow u;
  u.time_s = 0.1;
  u.rank_cpu_pct = {90, 95};
  u.rank_rss_bytes = {1e8, 2e8};
  u.node_cpu_pct = 40;
  w->append_util(u);
  w->flush();

  JobData live = read_job(dir / "job1.h5.partial");
  EXPECT_TRUE(live.partial);
  EXPECT_EQ(live.status, "running");
  EXPECT_EQ(live.steps.rows, 10u);
  EXPECT_EQ(live.epochs.rows, 2u);
  EXPECT_EQ(live.util.rows, 1u);
  EXPECT_EQ(live.steps.matrices.at("rank_step_s").cols, 2u);

  w->finish(Status::TargetReached, "target accuracy reached",
            {{"flops_per_s", 2e9}, {"samples_per_s", 123.0}});
  EXPECT_EQ(w->path(), dir / "job1.h5");
  EXPECT_FALSE(fs::exists(dir / "job1.h5.partial"));
  EXPECT_THROW(w->append_step(step(10, 2)), std::logic_error);

  JobData j = read_job(dir / "job1.h5");
  EXPECT_FALSE(j.partial);
  EXPECT_EQ(j.id, "job1");
  EXPECT_EQ(j.run, "unit");
  EXPECT_EQ(j.status, "target_reached");
  EXPECT_EQ(j.exit_reason, "target accuracy reached");
  EXPECT_EQ(j.schema_version, kSchemaVersion);
  EXPECT_EQ(j.start_time.size(), 20u);  // 2024-01-02T03:04:05Z
  EXPECT_EQ(j.end_time.back(), 'Z');
  EXPECT_EQ(j.attr_string("torch_version"), "1.13.1");
  EXPECT_EQ(j.attr_number("cpu_cores_used", 0), 2);
  EXPECT_DOUBLE_EQ(j.attr_number("model_gflops", 0), 1.5);
  // The file has every parameter as its own attribute (for h5py users); the reader keeps them
  // typed only (JobData::params), not a second time among the attributes.
  const auto raw = root_attrs(dir / "job1.h5");
  EXPECT_DOUBLE_EQ(std::get<double>(raw.at("param.lr")), 0.1);
  EXPECT_EQ(std::get<std::string>(raw.at("param.model")), "mlp");
  EXPECT_EQ(std::get<std::int64_t>(raw.at("param.overlap")), 1);
  EXPECT_EQ(j.attrs.count("param.lr"), 0u);
  EXPECT_DOUBLE_EQ(j.params->lr, 0.1);
  EXPECT_EQ(j.params->overlap, true);
  EXPECT_EQ(j.gpu_absent_reason, "NVML not found");
  EXPECT_EQ(j.util.matrices.count("gpu_util_pct"), 0u);
  ASSERT_EQ(j.steps.rows, 10u);
  EXPECT_EQ(j.steps.columns.at("step")[9], 9);
  EXPECT_EQ(j.steps.columns.at("epoch")[9], 1);
  EXPECT_DOUBLE_EQ(j.util.matrices.at("rank_rss_bytes").at(0, 1), 2e8);
  // Summary: derived figures plus the caller's, the caller's winning.
  EXPECT_DOUBLE_EQ(j.summary.at("flops_per_s"), 2e9);
  EXPECT_DOUBLE_EQ(j.summary.at("samples_per_s"), 123.0);
  EXPECT_EQ(j.summary.at("steps_done"), 10);
  EXPECT_EQ(j.summary.at("timing_rows"), 8);              // 2 warm-up steps excluded
  EXPECT_NEAR(j.summary.at("step_s_p50"), 0.115, 1e-12);  // 0.10,0.11,0.12,0.13 twice
  EXPECT_NEAR(j.summary.at("comm_share"), 0.02 * 8 / (2 * (0.10 + 0.11 + 0.12 + 0.13)), 1e-12);
  EXPECT_EQ(j.summary.at("epochs_to_target"), 2);
  EXPECT_DOUBLE_EQ(j.summary.at("time_to_target_s"), 2.0);
  EXPECT_DOUBLE_EQ(j.summary.at("final_test_acc"), 0.75);
  EXPECT_DOUBLE_EQ(j.summary.at("peak_rss_bytes"), 2e8);
  EXPECT_DOUBLE_EQ(j.summary.at("cpu_util_pct_mean"), 92.5);
  EXPECT_EQ(job_status(dir / "job1.h5"), "target_reached");
}

TEST(Writer, GpuColumnsOnlyWithGpus) {
  TempDir dir;
  auto w = JobWriter::create(dir.path(), info("g", 1, 2));
  UtilRow u;
  u.rank_cpu_pct = {100};
  u.rank_rss_bytes = {1};
  for (auto* v :
       {&u.gpu_util_pct, &u.gpu_mem_bytes, &u.gpu_power_w, &u.gpu_energy_j, &u.gpu_temp_c, &u.gpu_sm_mhz})
    *v = {10, 20};
  u.gpu_energy_j = {100, 200};
  w->append_util(u);
  u.time_s = 1;
  u.gpu_energy_j = {150, 260};
  w->append_util(u);
  w->finish(Status::Completed, "done", {});
  JobData j = read_job(dir / "g.h5");
  ASSERT_EQ(j.util.matrices.at("gpu_power_w").cols, 2u);
  EXPECT_EQ(j.util.rows, 2u);
  EXPECT_TRUE(j.gpu_absent_reason.empty());
  EXPECT_DOUBLE_EQ(j.summary.at("energy_j"), 110);         // counters: (150-100) + (260-200)
  EXPECT_DOUBLE_EQ(j.summary.at("gpu_power_w_mean"), 30);  // summed over devices
}

// A reader holding the partial file open (a user's h5py, `gridrun status`: HDF5 takes a shared
// flock) must not fail the job: the writer's reopens take no lock (h5::writer_fapl). Before, the
// final reopen failed with EAGAIN and a job that had completed exited 1 (slurm_hosts_sittings).
TEST(Writer, AReaderHoldingTheFileDoesNotFailTheJob) {
  TempDir dir;
  auto w = JobWriter::create(dir.path(), info("locked", 1, 0));
  w->append_step(step(0, 1));
  w->flush();
  const std::string partial = dir / "locked.h5.partial";
  const int fd = ::open(partial.c_str(), O_RDONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::flock(fd, LOCK_SH | LOCK_NB), 0);  // as HDF5 does for a reader
  EXPECT_NO_THROW(w->finish(Status::Completed, "done", {}));
  ::close(fd);
  EXPECT_EQ(read_job(dir / "locked.h5").status, "completed");
}

TEST(Writer, UnflushedRowsAreNotCommitted) {
  TempDir dir;
  auto w = JobWriter::create(dir.path(), info("c", 1, 0));
  for (int i = 0; i < 5; ++i) w->append_step(step(i, 1));
  EXPECT_EQ(read_job(dir / "c.h5.partial").steps.rows, 0u);
  w->flush();
  for (int i = 5; i < 8; ++i) w->append_step(step(i, 1));
  JobData j = read_job(dir / "c.h5.partial");  // live SWMR writer: read through SWMR
  EXPECT_EQ(j.steps.rows, 5u);
  EXPECT_EQ(j.steps.columns.at("step").size(), 5u);
  w->flush();
  EXPECT_EQ(read_job(dir / "c.h5.partial").steps.rows, 8u);
}

TEST(Writer, AutoFlushAfterInterval) {
  TempDir dir;
  JobFileInfo i = info("a", 1, 0);
  i.flush_interval_s = 1e-9;  // every append flushes
  auto w = JobWriter::create(dir.path(), i);
  w->append_step(step(0, 1));
  EXPECT_EQ(read_job(dir / "a.h5.partial").steps.rows, 1u);
}

TEST(Writer, RejectsWrongRankVectorSize) {
  TempDir dir;
  auto w = JobWriter::create(dir.path(), info("r", 2, 0));
  EXPECT_THROW(w->append_step(step(0, 3)), std::invalid_argument);
  UtilRow u;
  u.rank_cpu_pct = {1};
  u.rank_rss_bytes = {1, 2};
  EXPECT_THROW(w->append_util(u), std::invalid_argument);
}

TEST(Writer, DestructorWithoutFinishLeavesReadablePartial) {
  TempDir dir;
  {
    auto w = JobWriter::create(dir.path(), info("d", 1, 0));
    for (int i = 0; i < 4; ++i) w->append_step(step(i, 1));
  }
  JobData j = read_job(dir / "d.h5.partial");
  EXPECT_EQ(j.status, "running");
  EXPECT_EQ(j.steps.rows, 4u);
}

// gridrun-train and gridrun-exec record a job that failed before it ran with one function: a file
// of its own where none exists, and an earlier attempt's rows left exactly as they were.
TEST(Writer, EarlyFailureRecordedOnlyWhereNoFileExists) {
  TempDir dir;
  EXPECT_EQ(gridrun::results::record_early_failure(dir.path(), info("early", 1, 0), "cannot start: x"), "");
  JobData fresh = read_job(dir / "early.h5");
  EXPECT_EQ(fresh.status, "failed");
  EXPECT_EQ(fresh.exit_reason, "cannot start: x");
  EXPECT_EQ(fresh.steps.rows, 0u);
  {
    auto w = JobWriter::create(dir.path(), info("kept", 1, 0));
    for (int i = 0; i < 3; ++i) w->append_step(step(i, 1));
  }
  EXPECT_EQ(gridrun::results::record_early_failure(dir.path(), info("kept", 1, 0), "cannot start: y"), "");
  JobData kept = read_job(dir / "kept.h5.partial");
  EXPECT_EQ(kept.status, "running");
  EXPECT_EQ(kept.steps.rows, 3u);
  EXPECT_FALSE(fs::exists(dir / "kept.h5"));
  // Nothing of the temporary folder stays behind.
  for (const auto& e : fs::directory_iterator(dir.path()))
    EXPECT_EQ(e.path().filename().string().rfind('.', 0), std::string::npos) << e.path();
}

TEST(Writer, ResumeKeepsRowsBeforeCheckpoint) {
  TempDir dir;
  {
    auto w = JobWriter::create(dir.path(), info("res", 2, 0));
    for (int i = 0; i < 12; ++i) {
      w->append_step(step(i, 2));
      if (i % 5 == 4) w->append_epoch(epoch(i / 5, 0.5));
    }
    w->flush();  // steps 0..11 (epochs 0,1,2), epoch rows 0 and 1
  }
  JobFileInfo i = info("res", 2, 0);
  i.resume_from_step = 7;  // checkpoint after step 6 (in epoch 1): redo steps 7.. and epoch 1
  auto w = JobWriter::create(dir.path(), i);
  JobData mid = read_job(dir / "res.h5.partial");
  EXPECT_EQ(mid.steps.rows, 7u);
  EXPECT_EQ(mid.epochs.rows, 1u);
  EXPECT_EQ(mid.attr_number("resumed_from_step", 0), 7);
  for (int k = 7; k < 10; ++k) w->append_step(step(k, 2));
  w->append_epoch(epoch(1, 0.8));
  w->finish(Status::Completed, "done", {});
  JobData j = read_job(dir / "res.h5");
  ASSERT_EQ(j.steps.rows, 10u);
  for (int k = 0; k < 10; ++k) EXPECT_EQ(j.steps.columns.at("step")[k], k);
  ASSERT_EQ(j.epochs.rows, 2u);
  EXPECT_DOUBLE_EQ(j.epochs.columns.at("test_acc")[1], 0.8);

  // Resuming a finished file renames it back and continues; a rank mismatch is refused.
  JobFileInfo bad = info("res", 4, 0);
  bad.resume_from_step = 10;
  EXPECT_THROW(JobWriter::create(dir.path(), bad), std::invalid_argument);
  JobFileInfo again = info("res", 2, 0);
  again.resume_from_step = 10;
  auto w2 = JobWriter::create(dir.path(), again);
  EXPECT_EQ(job_status(dir / "res.h5.partial"), "running");
  w2->append_step(step(10, 2));
  w2->finish(Status::Completed, "done", {});
  EXPECT_EQ(read_job(dir / "res.h5").steps.rows, 11u);
}

// /attempts (issue 23): one row per start, kept across resumes, with where each attempt ran; the
// refused resume (rank mismatch) adds none.
TEST(Writer, EveryAttemptIsARowOfAttempts) {
  TempDir dir;
  {
    JobFileInfo i = info("att", 2, 0);
    i.attempt_hostname = "host2";
    i.attempt_hostnames = "host2,host3";
    i.attempt_batch_id = "41_0";
    i.attempt_restart_count = 0;
    auto w = JobWriter::create(dir.path(), i);
    for (int k = 0; k < 6; ++k) w->append_step(step(k, 2));
    w->flush();
  }
  JobFileInfo bad = info("att", 4, 0);
  bad.resume_from_step = 5;
  EXPECT_THROW(JobWriter::create(dir.path(), bad), std::invalid_argument);
  JobFileInfo i = info("att", 2, 0);
  i.resume_from_step = 5;
  i.attempt_hostname = "host1";
  i.attempt_hostnames = "host1,host2";
  i.attempt_batch_id = "41_0";
  i.attempt_restart_count = 1;
  auto w = JobWriter::create(dir.path(), i);
  w->append_step(step(5, 2));
  w->finish(Status::Completed, "done", {});
  const JobData j = read_job(dir / "att.h5");
  ASSERT_EQ(j.attempts.size(), 2u);
  EXPECT_EQ(j.attempts[0].hostnames, "host2,host3");
  EXPECT_EQ(j.attempts[0].resumed_from_step, 0);
  EXPECT_EQ(j.attempts[0].restart_count, 0);
  EXPECT_EQ(j.attempts[1].hostname, "host1");
  EXPECT_EQ(j.attempts[1].batch_id, "41_0");
  EXPECT_EQ(j.attempts[1].resumed_from_step, 5);
  EXPECT_EQ(j.attempts[1].restart_count, 1);
  EXPECT_FALSE(j.attempts[1].started_at.empty());
  const JobGlance g = job_glance(dir / "att.h5");
  EXPECT_EQ(g.status, "completed");
  EXPECT_EQ(g.attempts.size(), 2u);
}

TEST(Writer, FreshCreateReplacesStalePartial) {
  TempDir dir;
  {
    auto w = JobWriter::create(dir.path(), info("s", 1, 0));
    w->append_step(step(0, 1));
    w->flush();
  }
  auto w = JobWriter::create(dir.path(), info("s", 1, 0));
  EXPECT_EQ(read_job(dir / "s.h5.partial").steps.rows, 0u);
}

TEST(Reader, MissingAndCorruptFilesAreNamed) {
  TempDir dir;
  EXPECT_EQ(job_status(dir / "none.h5"), "");
  try {
    read_job(dir / "none.h5");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("none.h5"), std::string::npos);
  }
  std::ofstream(dir / "bad.h5") << "garbage";
  EXPECT_EQ(job_status(dir / "bad.h5"), "");
  try {
    read_job(dir / "bad.h5");
    FAIL();
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("bad.h5"), std::string::npos);
  }
}

// The reader returns the parameters typed (jobs::JobParams), not a name->value map: the writer
// renders them once (the `params` attribute, canonical JSON) and the reader parses them once.
// A parameter the file does not mention (written before it existed) reads as its default; a
// name no gridrun knows is an error naming it.
TEST(Reader, ReturnsTypedParamsWithDefaultsForOlderFiles) {
  TempDir dir;
  JobFileInfo i = info("typed", 2, 0);
  i.params.augment = "crop_flip";
  auto w = JobWriter::create(dir.path(), i);
  w->finish(Status::Completed, "", Summary{});
  w.reset();
  JobData j = read_job(dir / "typed.h5");
  ASSERT_TRUE(j.params.has_value());
  EXPECT_EQ(*j.params, i.params);
  EXPECT_EQ(j.params->ranks, 2);
  EXPECT_EQ(j.params->augment, "crop_flip");
  EXPECT_EQ(std::get<std::string>(root_attrs(dir / "typed.h5").at("params")),
            gridrun::jobs::canonical_json(i.params));
  EXPECT_EQ(j.attrs.count("params"), 0u);
  EXPECT_EQ(std::get<std::string>(*param_value(j.params, "model")), "mlp");
  EXPECT_FALSE(param_value(j.params, "no_such_param").has_value());
  EXPECT_FALSE(param_value(std::nullopt, "model").has_value());

  const auto old = gridrun::jobs::job_params_from_json("{\"model\":\"lenet\"}");
  EXPECT_EQ(old.model, "lenet");
  EXPECT_EQ(old.augment, "none");
  EXPECT_EQ(old.mlp_hidden, gridrun::jobs::JobParams{}.mlp_hidden);
  try {
    gridrun::jobs::job_params_from_json("{\"modle\":\"mlp\"}");
    FAIL() << "unknown key accepted";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("modle"), std::string::npos) << e.what();
  }
}

// The report's columns and the HTML legend's words are the parameters that differ between jobs.
TEST(Reader, VaryingParamsAreThoseThatDiffer) {
  gridrun::jobs::JobParams a, b;
  b.ranks = a.ranks + 1;
  b.lr = a.lr * 2;
  const RecordedParams pa = a, pb = b, none;
  EXPECT_EQ(varying_params({&pa, &pa}), std::vector<std::string>{});
  EXPECT_EQ(varying_params({&pa, &pb}), (std::vector<std::string>{"lr", "ranks"}));
  EXPECT_EQ(param_text(pb, "ranks"), std::to_string(b.ranks));
  EXPECT_EQ(param_text(none, "ranks"), "");
  EXPECT_EQ(varying_params({&none, &none}), std::vector<std::string>{});
  // A job without parameters (failed before reading them) differs in every parameter, but
  // model_sha256 and data_sha256 are not shown beside a differing model_file and data_file (each
  // is derived from its file).
  // user_params, a command grid's own parameters as one JSON text, is never a column: its members are.
  const auto all = varying_params({&pa, &none});
  EXPECT_EQ(all.size(), gridrun::jobs::param_table().size() - 3);
  EXPECT_EQ(std::count(all.begin(), all.end(), "user_params"), 0);
  gridrun::jobs::JobParams own1 = a, own2 = a;
  own1.user_params = R"({"dropout":0.1,"sched":"cosine"})";
  own2.user_params = R"({"dropout":0.3,"sched":"cosine"})";
  const RecordedParams po1 = own1, po2 = own2;
  EXPECT_EQ(varying_params({&po1, &po2}), std::vector<std::string>{"dropout"});
  EXPECT_EQ(param_text(po2, "dropout"), "0.3");
  EXPECT_EQ(param_text(po2, "nope"), "");
  EXPECT_EQ(std::count(all.begin(), all.end(), "model_sha256"), 0);
  EXPECT_EQ(std::count(all.begin(), all.end(), "data_sha256"), 0);
  gridrun::jobs::JobParams c = a, d = a;
  c.model_sha256 = "ab";
  d.model_sha256 = "cd";
  const RecordedParams pc = c, pd = d;
  EXPECT_EQ(varying_params({&pc, &pd}), std::vector<std::string>{"model_sha256"});  // one path, two contents
}

// Every column of /steps, /epochs and /util holds the value of the row member of its name: rows
// whose members all differ are written, read back by dataset name and compared with a pairing
// spelled out here (not taken from the writer's descriptor lists, which could be wrong).
TEST(Writer, ColumnNamesPairWithTheirValues) {
  TempDir dir;
  auto w = JobWriter::create(dir.path(), info("pairs", 2, 1));
  StepRow s;
  s.step = 11, s.epoch = 12, s.wall_s = 13, s.loss = 14, s.samples_per_s = 15, s.step_s = 16, s.data_s = 17,
  s.forward_s = 18, s.backward_s = 19, s.optimizer_s = 20, s.comm_s = 21, s.exposed_comm_s = 22,
  s.rank_step_s = {23, 24};
  w->append_step(s);
  EpochRow e;
  e.epoch = 31, e.train_loss = 32, e.train_acc = 33, e.test_loss = 34, e.test_acc = 35, e.epoch_s = 36,
  e.wall_s = 37;
  w->append_epoch(e);
  UtilRow u;
  u.time_s = 41, u.rank_cpu_pct = {42, 43}, u.rank_rss_bytes = {44, 45}, u.node_cpu_pct = 46,
  u.gpu_util_pct = {47}, u.gpu_mem_bytes = {48}, u.gpu_power_w = {49}, u.gpu_energy_j = {50},
  u.gpu_temp_c = {51}, u.gpu_sm_mhz = {52};
  w->append_util(u);
  w->flush();
  JobData j = read_job(w->path());

  const std::map<std::string, double> steps = {
      {"step", 11},          {"epoch", 12},       {"wall_s", 13}, {"loss", 14},
      {"samples_per_s", 15}, {"step_s", 16},      {"data_s", 17}, {"forward_s", 18},
      {"backward_s", 19},    {"optimizer_s", 20}, {"comm_s", 21}, {"exposed_comm_s", 22}};
  const std::map<std::string, double> epochs = {{"epoch", 31},     {"train_loss", 32}, {"train_acc", 33},
                                                {"test_loss", 34}, {"test_acc", 35},   {"epoch_s", 36},
                                                {"wall_s", 37}};
  const std::map<std::string, double> util = {{"time_s", 41}, {"node_cpu_pct", 46}};
  const std::map<std::string, std::vector<double>> util_m = {
      {"rank_cpu_pct", {42, 43}}, {"rank_rss_bytes", {44, 45}}, {"gpu_util_pct", {47}},
      {"gpu_mem_bytes", {48}},    {"gpu_power_w", {49}},        {"gpu_energy_j", {50}},
      {"gpu_temp_c", {51}},       {"gpu_sm_mhz", {52}}};
  auto check = [](const TableData& t, const std::map<std::string, double>& want, const char* table) {
    ASSERT_EQ(t.rows, 1u) << table;
    EXPECT_EQ(t.columns.size(), want.size()) << table;
    for (const auto& [name, v] : want) {
      ASSERT_TRUE(t.column(name)) << table << "/" << name;
      EXPECT_EQ(t.column(name)->at(0), v) << table << "/" << name;
    }
  };
  check(j.steps, steps, "steps");
  check(j.epochs, epochs, "epochs");
  check(j.util, util, "util");
  EXPECT_EQ(j.steps.matrices.at("rank_step_s").data, (std::vector<double>{23, 24}));
  EXPECT_EQ(j.util.matrices.size(), util_m.size());
  for (const auto& [name, v] : util_m) {
    ASSERT_TRUE(j.util.matrices.count(name)) << name;
    EXPECT_EQ(j.util.matrices.at(name).data, v) << name;
  }
  // /profile: the same check by name.
  w->set_profile({OpProfile{"aten::mm", 61, 62, 63, 64, 65}});
  w->finish(Status::Completed, "", {});
  JobData f = read_job(w->path());
  ASSERT_EQ(f.profile.size(), 1u);
  const OpProfile& p = f.profile[0];
  EXPECT_EQ(p.name, "aten::mm");
  // In the order of the OpProfile{...} above: calls, self/total CPU, self/total device.
  EXPECT_EQ((std::vector<double>{static_cast<double>(p.calls), p.self_cpu_us, p.total_cpu_us,
                                 p.self_device_us, p.total_device_us}),
            (std::vector<double>{61, 62, 63, 64, 65}));
}

// A row rejected for a wrong width leaves nothing behind: the next good rows stay aligned.
TEST(Writer, RejectedRowLeavesNoValues) {
  TempDir dir;
  auto w = JobWriter::create(dir.path(), info("reject", 2, 0));
  EXPECT_THROW(w->append_step(step(0, 3)), std::invalid_argument);
  w->append_step(step(1, 2));
  w->flush();
  JobData j = read_job(w->path());
  ASSERT_EQ(j.steps.rows, 1u);
  EXPECT_EQ(j.steps.columns.at("step")[0], 1);
  EXPECT_EQ(j.steps.columns.at("epoch")[0], 0);
}
