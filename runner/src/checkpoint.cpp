// Checkpoint save/load (see checkpoint.hpp for the layout and the atomicity argument).
#include "checkpoint.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <torch/optim/optimizer.h>
#include <torch/serialize.h>
#ifdef GRIDRUN_HAVE_NCCL
#include <ATen/cuda/CUDAGeneratorImpl.h>
#include <torch/cuda.h>
#endif

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <optional>
#include <sstream>
#include <thread>

#include "archive_check.hpp"
#include "gridrun/base/fs.hpp"
#include "gridrun/base/host.hpp"
#include "gridrun/base/spawn.hpp"
#include "gridrun/base/text.hpp"
#include "gridrun/run/run_dir.hpp"
#include "gridrun/runner/errors.hpp"

namespace gridrun::runner {

namespace fs = std::filesystem;

namespace {

at::Tensor state_tensor(const TrainState& s) {
  return torch::tensor(
      {static_cast<double>(s.epoch), static_cast<double>(s.step_in_epoch), static_cast<double>(s.global_step),
       s.wall_s, s.epoch_loss_sum, s.epoch_correct, s.epoch_count, s.epoch_s, s.best_test_acc,
       static_cast<double>(s.world), s.loss_scale},
      torch::kFloat64);
}

TrainState state_from(const at::Tensor& t) {
  auto a = t.accessor<double, 1>();
  TrainState s;
  s.epoch = static_cast<std::int64_t>(a[0]);
  s.step_in_epoch = static_cast<std::int64_t>(a[1]);
  s.global_step = static_cast<std::int64_t>(a[2]);
  s.wall_s = a[3];
  s.epoch_loss_sum = a[4];
  s.epoch_correct = a[5];
  s.epoch_count = a[6];
  s.epoch_s = a[7];
  s.best_test_acc = a[8];
  s.world = static_cast<std::int64_t>(a[9]);
  s.loss_scale = a[10];
  return s;
}

std::int64_t step_of(const fs::path& p) {
  const std::string n = p.filename().string();
  if (n.rfind("ckpt-", 0) != 0 || n.find('.') != std::string::npos) return -1;
  try {
    return std::stoll(n.substr(5));
  } catch (...) {
    return -1;
  }
}

// Newest complete ckpt-<step>/ folder in `dir` ("" if none).
std::string newest_in(const std::string& dir) {
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return "";
  std::int64_t best = -1;
  std::string path;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const auto s = step_of(e.path());
    if (s > best && fs::exists(e.path() / "state.pt")) {
      best = s;
      path = e.path().string();
    }
  }
  return path;
}

// Serializing straight to a file is not safe to fail: when LibTorch's zip writer hits a write error
// (disk full, RLIMIT_FSIZE) it throws, and its destructor then tries to finish the archive, throws
// again, and std::terminate ends the process with a stack dump and no checkpoint state to speak of.
// So archives are built in memory and written here, where every error is an exception naming the
// file (base::write_file_atomic leaves no half-written file to hold the space the next try needs).
void write_file(const fs::path& p, const std::string& bytes) {
  try {
    base::write_file_atomic(p.string(), bytes);
  } catch (const std::exception& e) {
    throw std::runtime_error(std::string("checkpoint ") + e.what());
  }
}

}  // namespace

Checkpointer::Checkpointer(std::string dir, Communicator& comm) : dir_(std::move(dir)), comm_(comm) {}

std::string Checkpointer::latest() const { return newest_in(dir_); }

std::string resolve_checkpoint(const std::string& spec, const std::string& out_dir) {
  std::error_code ec;
  if (fs::is_regular_file(spec, ec)) return spec;
  if (fs::is_directory(spec, ec)) {
    if (fs::is_regular_file(fs::path(spec) / "state.pt", ec)) return (fs::path(spec) / "state.pt").string();
    const std::string newest = newest_in(spec);
    if (!newest.empty()) return newest + "/state.pt";
    throw BadInput("gridrun-train: checkpoint=" + spec +
                   ": the folder holds no state.pt and no "
                   "complete ckpt-<step>/ checkpoint");
  }
  const bool id_like = !spec.empty() && spec.find('/') == std::string::npos;
  // The run's checkpoints/<id>/, the run being the one whose results folder is <out>.
  const fs::path by_id = run::RunDir::of_results_dir(out_dir).checkpoint_dir(spec);
  if (id_like) {
    const std::string newest = newest_in(by_id.string());
    if (!newest.empty()) return newest + "/state.pt";
  }
  throw BadInput("gridrun-train: checkpoint=" + spec + ": no such file or folder" +
                 (id_like
                      ? ", and no checkpoint of a job with that id in " + by_id.lexically_normal().string()
                      : std::string()));
}

void load_model_weights(const std::string& state_file, Model& model) {
  const auto params = model.parameters();
  const c10::Device dev = params.empty() ? c10::Device(c10::kCPU) : params.front().device();
  try {
    check_torch_archive(state_file);
  } catch (const std::runtime_error& e) {
    throw BadInput("gridrun-train: checkpoint " + std::string(e.what()));
  }
  try {
    torch::serialize::InputArchive root, m;
    root.load_from(state_file, dev);
    root.read("model", m);
    model.load(m);
  } catch (const c10::Error& e) {
    throw BadInput("gridrun-train: checkpoint " + state_file + " does not fit model (" +
                   e.what_without_backtrace() + ")");
  }
}

void Checkpointer::save(Model& model, torch::optim::Optimizer& opt, const TrainState& st) {
  const fs::path final_dir = fs::path(dir_) / ("ckpt-" + std::to_string(st.global_step));
  const fs::path tmp = fs::path(dir_) / ("ckpt-" + std::to_string(st.global_step) + ".tmp");
  if (comm_.rank() == 0) {
    fs::create_directories(dir_);
    fs::remove_all(tmp);
    fs::create_directories(tmp);
  }
  comm_.barrier();
  {
    std::vector<at::Tensor> rng{at::detail::getDefaultCPUGenerator().get_state()};
#ifdef GRIDRUN_HAVE_NCCL
    if (torch::cuda::is_available()) rng.push_back(at::cuda::detail::getDefaultCUDAGenerator().get_state());
#endif
    std::ostringstream bytes;
    torch::save(rng, bytes);
    write_file(tmp / ("rng-" + std::to_string(comm_.rank()) + ".pt"), bytes.str());
  }
  if (comm_.rank() == 0) {
    torch::serialize::OutputArchive root, m, o;
    model.save(m);
    opt.save(o);
    root.write("model", m);
    root.write("optimizer", o);
    root.write("train_state", state_tensor(st));
    std::ostringstream bytes;
    root.save_to(bytes);
    write_file(tmp / "state.pt", bytes.str());
  }
  comm_.barrier();
  if (comm_.rank() == 0) {
    fs::remove_all(final_dir);
    base::rename_durable(tmp.string(), final_dir.string());
    for (const auto& e : fs::directory_iterator(dir_)) {
      const auto s = step_of(e.path());
      if (s >= 0 && s != st.global_step) fs::remove_all(e.path());
    }
  }
  comm_.barrier();
}

bool Checkpointer::load(Model& model, torch::optim::Optimizer& opt, TrainState& st) {
  // A checkpoint that cannot be read (truncated, corrupted) is renamed ckpt-<step>.damaged, which
  // latest() no longer sees, and the next newest one is tried; with none left the job restarts.
  // All ranks must agree, so every attempt ends with an allreduce of the failures.
  // A load that fails half-way may have changed some parameters; the fresh start (or the next
  // checkpoint) must begin from the initial weights, kept here.
  std::string initial;
  {
    torch::serialize::OutputArchive root, m, o;
    model.save(m);
    opt.save(o);
    root.write("model", m);
    root.write("optimizer", o);
    std::ostringstream bytes;
    root.save_to(bytes);
    initial = bytes.str();
  }
  auto restore = [&] {
    const auto params = model.parameters();
    const c10::Device dev = params.empty() ? c10::Device(c10::kCPU) : params.front().device();
    torch::serialize::InputArchive root, m, o;
    std::istringstream in(initial);
    root.load_from(in, dev);
    root.read("model", m);
    root.read("optimizer", o);
    model.load(m);
    opt.load(o);
  };
  for (;;) {
    const std::string path = latest();
    if (path.empty()) return false;
    // A checkpoint that crashes LibTorch's unpickler (fuzzing found inputs that do) would crash
    // every attempt of the job, so rank 0 reads it in a process of its own first; all ranks then
    // treat a failed trial like any damaged checkpoint.
    std::string why = comm_.rank() == 0 ? trial_read(path) : std::string();
    const auto trial_bad = comm_.allreduce_sum(std::vector<double>{why.empty() ? 0.0 : 1.0});
    if (trial_bad[0] == 0) try {
        load_from(path, model, opt, st);
      } catch (const BadInput&) {
        throw;
      } catch (const c10::Error& e) {
        why = e.what_without_backtrace();
      } catch (const std::exception& e) {
        why = e.what();
      }
    const auto bad = comm_.allreduce_sum(std::vector<double>{why.empty() ? 0.0 : 1.0});
    if (bad[0] == 0) return true;
    if (!why.empty()) {
      for (char& c : why)
        if (c == '\n') c = ' ';
      std::fprintf(stderr, "gridrun-train: warning: rank %d: checkpoint %s is damaged (%s)\n", comm_.rank(),
                   path.c_str(), why.c_str());
    }
    restore();
    comm_.barrier();
    if (comm_.rank() == 0) {
      const std::string to = base::quarantine(path);
      if (to.empty())
        throw std::runtime_error("checkpoint " + path +
                                 ": damaged, and cannot move it aside: " + base::errno_text(errno));
      std::fprintf(stderr, "gridrun-train: warning: checkpoint %s is damaged; moved to %s\n", path.c_str(),
                   to.c_str());
    }
    comm_.barrier();
  }
}

std::string Checkpointer::trial_read(const std::string& path) const {
  const std::string self = base::self_exe();
  if (self.empty()) return "";  // no /proc: read it directly, unguarded
  base::SpawnOptions so;
  so.argv = {self, "--check-checkpoint", path};
  so.stdout_path = "/dev/null";
  so.stderr_path = "/dev/null";
  so.reset_signals = true;
  base::Child child = base::spawn(so);
  // A reader that takes this long is hung on a hostile file (a readable checkpoint of the largest
  // models gridrun trains loads in a few seconds).
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(120);
  std::optional<int> code;
  while (!(code = child.try_wait())) {
    if (std::chrono::steady_clock::now() > deadline) {
      child.signal(SIGKILL);
      child.wait();
      return "reading it hung for 120 s";
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  if (*code == 0) return "";
  if (*code > 128) return "reading it crashed with " + base::signal_text(*code - 128);
  return "it cannot be read (gridrun-train --check-checkpoint exited " + std::to_string(*code) + ")";
}

void read_checkpoint_files(const std::string& dir) {
  torch::serialize::InputArchive root, m, o;
  check_torch_archive(dir + "/state.pt");
  root.load_from(dir + "/state.pt", c10::Device(c10::kCPU));
  at::Tensor t;
  root.read("train_state", t);
  if (t.dim() != 1 || t.numel() != state_tensor(TrainState{}).numel() || t.scalar_type() != torch::kFloat64)
    throw std::runtime_error("train_state has the wrong shape");
  root.read("model", m);
  root.read("optimizer", o);
  for (const auto& e : fs::directory_iterator(dir)) {
    const std::string name = e.path().filename().string();
    if (name.rfind("rng-", 0) != 0) continue;
    std::vector<at::Tensor> rng;
    check_torch_archive(e.path().string());
    torch::load(rng, e.path().string());
  }
}

void Checkpointer::load_from(const std::string& path, Model& model, torch::optim::Optimizer& opt,
                             TrainState& st) {
  torch::serialize::InputArchive root, m, o;
  // Load straight onto the model's device, so optimizer state (momentum, Adam moments) lands there.
  const auto params = model.parameters();
  const c10::Device dev = params.empty() ? c10::Device(c10::kCPU) : params.front().device();
  check_torch_archive(path + "/state.pt");
  root.load_from(path + "/state.pt", dev);
  at::Tensor t;
  root.read("train_state", t);
  if (t.dim() != 1 || t.numel() != state_tensor(TrainState{}).numel() || t.scalar_type() != torch::kFloat64)
    throw std::runtime_error("train_state has the wrong shape");
  TrainState loaded = state_from(t.cpu());
  if (loaded.world != comm_.size())
    throw BadInput("gridrun-train: checkpoint " + path + " was written by " + std::to_string(loaded.world) +
                   " ranks; this run has " + std::to_string(comm_.size()) + " (resume needs the same ranks)");
  root.read("model", m);
  root.read("optimizer", o);
  // Every file is read before the model changes, so a damaged rng file leaves the model as it was.
  std::vector<at::Tensor> rng;
  const std::string rng_file = path + "/rng-" + std::to_string(comm_.rank()) + ".pt";
  check_torch_archive(rng_file);
  torch::load(rng, rng_file);
  model.load(m);
  opt.load(o);
  if (!rng.empty()) {
    at::Generator cpu_gen = at::detail::getDefaultCPUGenerator();  // a handle to the global one
    cpu_gen.set_state(rng[0]);
  }
#ifdef GRIDRUN_HAVE_NCCL
  if (rng.size() > 1 && torch::cuda::is_available()) {
    at::Generator cuda_gen = at::cuda::detail::getDefaultCUDAGenerator();
    cuda_gen.set_state(rng[1]);
  }
#endif
  st = loaded;
}

}  // namespace gridrun::runner
