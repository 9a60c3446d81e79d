// See synthetic.hpp. Every figure is a closed-form function of the job's parameters and the row
// index, so golden report outputs are stable across machines.
#include "synthetic.hpp"

#include "gridrun/results/reader.hpp"

#include <hdf5.h>

#include <cmath>
#include <filesystem>
#include <fstream>

namespace gridrun::results::testing {

namespace fs = std::filesystem;

void write_synthetic_job(const std::string& run_dir, const SyntheticJob& j) {
  fs::create_directories(fs::path(run_dir) / "results");
  fs::create_directories(fs::path(run_dir) / "jobs");
  int gbatch = 32 * j.ranks;
  JobFileInfo info;
  info.id = j.id;
  info.run = fs::path(run_dir).filename().string();
  gridrun::jobs::JobParams& p = info.params;  // the rest at their defaults (mlp, lr 0.1)
  p.device = *gridrun::base::parse_device(j.device);
  p.ranks = j.ranks;
  p.batch_per_rank = 32;
  p.global_batch = gbatch;
  p.seed = j.seed;
  p.target_accuracy = std::stod(std::to_string(j.target).substr(0, 4));
  p.timing_warmup_steps = 2;
  p.tf32 = false;  // the charts' roofs are checked at the fp32 peak (H100 67 TFLOP/s)
  info.str_attrs["torch_version"] = "synthetic";
  if (j.device == "gpu") info.str_attrs["gpu_names"] = "NVIDIA H100 80GB HBM3";
  info.ranks = j.ranks;
  bool gpu = j.device == "gpu";
  info.gpus = gpu ? 1 : 0;
  info.gpu_absent_reason = gpu ? "" : "cpu job";
  info.flush_interval_s = 0;
  if (!j.phase.empty()) info.str_attrs["meta.phase"] = j.phase;
  std::ofstream(fs::path(run_dir) / "jobs" / (j.id + ".json")) << "{\"id\":\"" << j.id << "\"}\n";
  auto w = JobWriter::create((fs::path(run_dir) / "results").string(), info);
  double wall = 0;
  int per_epoch = j.steps / j.epochs;
  for (int i = 0; i < j.steps; ++i) {
    StepRow r;
    r.step = i;
    r.epoch = i / per_epoch;
    double base = gpu ? 0.004 : 0.05 * (1 + 0.15 * std::log2(static_cast<double>(j.ranks)));
    r.step_s = base * (1 + 0.01 * j.seed + 0.02 * (i % 3)) + (i < 2 ? 0.5 : 0);
    wall += r.step_s;
    r.wall_s = wall;
    r.loss = 2.0 / (1 + i);
    r.samples_per_s = gbatch / r.step_s;
    r.data_s = 0.1 * r.step_s;
    r.forward_s = 0.3 * r.step_s;
    r.backward_s = 0.4 * r.step_s;
    r.optimizer_s = 0.05 * r.step_s;
    r.comm_s = j.ranks > 1 ? 0.1 * r.step_s * std::log2(static_cast<double>(j.ranks)) : 0;
    r.exposed_comm_s = 0.5 * r.comm_s;
    r.rank_step_s.assign(j.ranks, r.step_s);
    if (j.ranks > 1) r.rank_step_s.back() *= 1.05;  // a straggler
    w->append_step(r);
    if ((i + 1) % per_epoch == 0) {
      EpochRow e;
      e.epoch = r.epoch;
      e.train_loss = 1.0 / (1 + r.epoch);
      e.train_acc = 0.8 + 0.07 * r.epoch;
      e.test_loss = 1.1 / (1 + r.epoch);
      e.test_acc = 0.8 + 0.06 * r.epoch + 0.005 * j.seed + (gpu ? 0.002 : 0);
      e.epoch_s = wall;
      e.wall_s = wall;
      w->append_epoch(e);
      w->flush();
    }
  }
  for (int k = 0; k < 10; ++k) {
    UtilRow u;
    u.time_s = 0.1 * k;
    u.rank_cpu_pct.assign(j.ranks, 90.0 + k);
    u.rank_rss_bytes.assign(j.ranks, 100.0 * (1 << 20) + k * (1 << 20));
    u.node_cpu_pct = 50;
    if (gpu) {
      u.gpu_util_pct = {80.0 + k};
      u.gpu_mem_bytes = {2.0 * (1 << 30)};
      u.gpu_power_w = {150.0 + 2 * k};
      u.gpu_energy_j = {15.0 * k};
      u.gpu_temp_c = {60};
      u.gpu_sm_mhz = {1400};
    }
    w->append_util(u);
  }
  if (gpu) {  // an operator table shaped like LibTorch's profiler output (times in us)
    w->set_profile({{"aten::addmm", 60, 900.0, 1500.0, 4200.0, 4200.0},
                    {"aten::copy_", 40, 300.0, 300.0, 800.0, 800.0},
                    {"aten::relu", 40, 120.0, 150.0, 350.0, 350.0},
                    {"aten::mm", 20, 200.0, 260.0, 1900.0, 1900.0}});
  }
  const std::string path = w->path();
  if (j.finish)
    w->finish(j.status, j.status == Status::Failed ? "runtime error: synthetic" : "done",
              {{"flops_per_s", 1e9 * j.ranks},
               {"flops_per_sample", 2e5},
               {"bytes_per_sample", gpu ? 4e4 : 1e5},
               // Where the time went (the runner's time_* figures): launch grows with the ranks.
               {"launched_unix", 1.7e9 + j.seed},
               {"process_start_unix", 1.7e9 + j.seed + 0.05},
               {"first_step_unix", 1.7e9 + j.seed + 1.0 + 0.2 * j.ranks},
               {"finished_unix", 1.7e9 + j.seed + 1.0 + 0.2 * j.ranks + wall + 0.12 * j.epochs},
               {"time_train_s", wall},
               {"time_eval_s", 0.1 * j.epochs},
               {"time_checkpoint_s", 0.02 * j.epochs}});
  // A fixed start time, so that figures derived from it (a phase's time to target) are the same
  // in every run of the tests (the writer records the wall clock).
  // Finished files only: a running job's .partial is still held by its writer.
  const std::string file = path.substr(0, path.size() - std::string(".partial").size());
  const hid_t f = j.finish ? H5Fopen(file.c_str(), H5F_ACC_RDWR, H5P_DEFAULT) : -1;
  if (f >= 0) {
    const hid_t a = H5Aopen(f, "start_unix", H5P_DEFAULT);
    const double start = 1.7e9 + j.seed;
    if (a >= 0) {
      H5Awrite(a, H5T_NATIVE_DOUBLE, &start);
      H5Aclose(a);
    }
    H5Fclose(f);
  }
}

void make_synthetic_run(const std::string& run_dir) {
  for (int seed = 0; seed < 2; ++seed) {
    for (int ranks : {1, 2, 4}) {
      SyntheticJob j;
      j.id = "cpu-r" + std::to_string(ranks) + "-s" + std::to_string(seed);
      j.ranks = ranks;
      j.seed = seed;
      if (ranks == 1) j.phase = "several-small";
      if (ranks == 4 && seed == 0) j.phase = "one-large";
      write_synthetic_job(run_dir, j);
    }
    SyntheticJob g;
    g.id = "gpu-r1-s" + std::to_string(seed);
    g.device = "gpu";
    g.seed = seed;
    g.status = seed == 0 ? Status::TargetReached : Status::Completed;
    write_synthetic_job(run_dir, g);
  }
  SyntheticJob failed;
  failed.id = "cpu-r2-s2";
  failed.ranks = 2;
  failed.seed = 2;
  failed.steps = 6;
  failed.status = Status::Failed;
  write_synthetic_job(run_dir, failed);
  SyntheticJob running;
  running.id = "cpu-r4-s2";
  running.ranks = 4;
  running.seed = 2;
  running.finish = false;
  write_synthetic_job(run_dir, running);
  std::ofstream(fs::path(run_dir) / "results" / "corrupt000000.h5") << "this is not an HDF5 file\n";
  std::ofstream(fs::path(run_dir) / "jobs" / "missing000000.json") << "{\"id\":\"missing000000\"}\n";
  std::ofstream(fs::path(run_dir) / "state.json")
      << "{\"name\":\"synthetic\",\"jobs\":{},\"phases\":{\"one-large\":{\"makespan_s\":120.5,"
         "\"busy_resource_s\":482,\"capacity\":4,\"jobs\":[\"cpu-r4-s0\"]},\"several-small\":{"
         "\"makespan_s\":98.25,\"busy_resource_s\":196.5,\"capacity\":4,\"jobs\":[\"cpu-r1-s0\","
         "\"cpu-r1-s1\"]}}}\n";
}

}  // namespace gridrun::results::testing
