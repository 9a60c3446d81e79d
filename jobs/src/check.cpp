// The rules that involve more than one parameter (jobs::check), the one batch derivation
// (jobs::resolve_batch) and the per-value checks for parameters that bypassed the grid loader
// (jobs::check_values).
//
// Why here and not in the runner: every rule gridrun-train would reject a job for, before it
// touches data or devices, is a rule `gridrun plan` must reject the grid for, with the grid's
// file:line:col. Both call check(), so a new rule is written once and the two never disagree.
// Problems that depend on the machine (no GPU, missing data files, too few samples for the batch)
// stay in the runner: the planner cannot see them.
#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "gridrun/base/checked.hpp"
#include "gridrun/jobs/footprint.hpp"
#include "gridrun/jobs/params.hpp"
#include "params.hpp"

namespace gridrun::jobs {

namespace {

// The most ranks, cores or GPUs one job may ask for: the scheduler's counts are int.
constexpr std::int64_t kMaxJobUnits = std::numeric_limits<int>::max();

// "batch_per_rank * ranks = 4611686018427387912 * 4 overflows (global_batch beyond 2^63-1)".
std::string product_overflow(const char* a, std::int64_t av, const char* b, std::int64_t bv,
                             const char* what) {
  return std::string(a) + " * " + b + " = " + std::to_string(av) + " * " + std::to_string(bv) +
         " overflows (" + what + " beyond 2^63-1)";
}

// A valid mlp_hidden: 1 to 8 positive integers without leading zeros, separated by single commas
// ("256,128"). Strict on purpose: one spelling per architecture keeps one job id per architecture.
bool valid_layer_list(const std::string& s) {
  std::size_t layers = 0, i = 0;
  while (i < s.size()) {
    if (s[i] < '1' || s[i] > '9') return false;  // also rejects "", ",", " 1" and "0"
    std::size_t digits = 0;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i, ++digits;
    if (digits > 7) return false;  // at most 9,999,999 units: larger is a typo
    ++layers;
    if (i == s.size()) break;
    if (s[i] != ',' || i + 1 == s.size()) return false;
    ++i;
  }
  return layers >= 1 && layers <= 8;
}

class Rules {
 public:
  explicit Rules(const JobParams& p) : p_(p), train_(p.task == Task::train) {}

  std::vector<Problem> run();

 private:
  void add(std::string key, std::string message, std::string related = {}, std::string context = {});

  // Devices, precision, batch and stop conditions.
  void limits();

  // What only training or only inference takes.
  void task_rules();

  void quantize_rules();

  // Data sets: files, and images vs token ids.
  void data_rules();

  // model=torchscript and its file.
  void own_model_rules();

  // model=command (a grid's command:): gridrun-train's own keys do not apply.
  void command_rules();

  // The captured step has no allreduce, no fp16 loss scaling and only the foreach SGD step.
  void cuda_graph_rules();

  // GPU sharing (gridrun run places up to N such jobs on one GPU): one-rank GPU jobs only.
  void jobs_per_gpu_rules();

  void optimizer_rules();

  const JobParams& p_;
  const bool train_;
  std::vector<Problem> out_;
};

std::vector<Problem> Rules::run() {
  limits();
  task_rules();
  quantize_rules();
  data_rules();
  cuda_graph_rules();
  jobs_per_gpu_rules();
  optimizer_rules();
  command_rules();
  if (!valid_layer_list(p_.mlp_hidden))
    add("mlp_hidden", "'" + p_.mlp_hidden +
                          "' is not a list of 1 to 8 positive integers separated by commas "
                          "(e.g. 256,128)");
  return std::move(out_);
}

void Rules::add(std::string key, std::string message, std::string related, std::string context) {
  out_.push_back({std::move(key), std::move(message), std::move(related), std::move(context)});
}

void Rules::limits() {
  // Every count derived from two parameters is checked arithmetic (base/checked.hpp): a product
  // that wrapped would plan a job with a nonsense batch or core count and run it (issue 45).
  if (const auto gb = base::checked_mul(p_.batch_per_rank, p_.ranks); !gb)
    add("batch_per_rank",
        product_overflow("batch_per_rank", p_.batch_per_rank, "ranks", p_.ranks, "global_batch"), "ranks");
  else if (p_.global_batch != *gb)
    add("global_batch",
        "global_batch=" + std::to_string(p_.global_batch) +
            " != batch_per_rank * ranks = " + std::to_string(*gb),
        "batch_per_rank");
  // The scheduler counts a job's ranks, cores and GPUs in int (resources.hpp): more than that is
  // more than any node or cluster holds, and would wrap on the way there.
  const auto cores = base::checked_mul(p_.ranks, p_.threads_per_rank);
  if (p_.ranks > kMaxJobUnits)
    add("ranks", "ranks=" + std::to_string(p_.ranks) + " is more than one job can have (at most " +
                     std::to_string(kMaxJobUnits) + ")");
  else if (!cores || *cores > kMaxJobUnits)
    add("threads_per_rank",
        cores ? "ranks * threads_per_rank = " + std::to_string(*cores) +
                    " cores is more than one job can have (at most " + std::to_string(kMaxJobUnits) + ")"
              : product_overflow("ranks", p_.ranks, "threads_per_rank", p_.threads_per_rank, "cores"),
        "ranks");
  // Samples seen (epochs x train_samples) bound the steps the runner counts (epochs x steps per
  // epoch, at most one step per sample): when they fit, so do the steps.
  if (p_.epochs > 0 && p_.train_samples > 0 && !base::checked_mul(p_.epochs, p_.train_samples))
    add("epochs", product_overflow("epochs", p_.epochs, "train_samples", p_.train_samples, "samples"),
        "train_samples");
  if (p_.ranks % p_.nodes != 0)
    add("nodes",
        "ranks=" + std::to_string(p_.ranks) + " cannot be spread evenly over nodes=" +
            std::to_string(p_.nodes) + " (ranks must be a multiple of nodes)",
        "ranks");
  // A node has at most 4 GPUs (a GPU rank owns one: jobs::footprint): the limit is per node.
  else if (footprint(p_).per_node.gpus > 4)
    add("ranks",
        std::to_string(p_.ranks) + " is out of range for device gpu (1-4" +
            (p_.nodes > 1 ? " per node, here " + std::to_string(p_.ranks / p_.nodes) + " on each of " +
                                std::to_string(p_.nodes) + " nodes)"
                          : ")"),
        "device");
  if (p_.device != Device::gpu && p_.precision != Precision::fp32)
    add("precision", base::to_string(p_.precision) + " needs device gpu", "device",
        "this job has device " + to_string(p_.device));
  if (train_ && p_.epochs == 0 && p_.max_steps == 0)
    add("epochs", "epochs and max_steps are both 0, so the job would never stop; set one", "max_steps");
}

void Rules::task_rules() {
  if (!train_ && p_.precision != Precision::fp32)
    add("precision", "precision=" + base::to_string(p_.precision) + " needs task=train (inference runs fp32)",
        "task");
  if (train_ && !p_.checkpoint.empty())
    add("checkpoint",
        "checkpoint=" + p_.checkpoint +
            " applies to task=inference only (training continues from its own "
            "checkpoints with --resume)",
        "task");
  if (train_ && p_.quantize != "none")
    add("quantize", "quantize=" + p_.quantize + " needs task=inference", "task",
        "this job has task " + base::to_string(p_.task));
}

void Rules::quantize_rules() {
  if (p_.quantize != "int8") return;
  if (p_.device != Device::cpu)
    add("quantize", "quantize=int8 needs device=cpu (dynamic int8 linear layers are a CPU feature)",
        "device");
  if (p_.model == "transformer")
    add("quantize",
        "quantize=int8 is not available for model=transformer (its encoder's linear "
        "layers are LibTorch modules gridrun cannot swap)",
        "model");
}

void Rules::data_rules() {
  // fashion-mnist defaults to the Debian package's folder; synthetic needs no files; hdf5 is one file.
  const bool hdf5 = p_.dataset == "hdf5";
  if (p_.dataset != "synthetic" && p_.dataset != "fashion-mnist" && !hdf5 && p_.data_dir.empty())
    add("dataset", "dataset=" + p_.dataset + " needs data_dir (folder with the data set's files)",
        "data_dir");
  if (hdf5 && p_.data_file.empty())
    add("dataset", "dataset=hdf5 needs data_file (the HDF5 file with /train/x and /train/y)", "data_file");
  if (!hdf5 && !p_.data_file.empty())
    add("data_file", "data_file is read by dataset=hdf5 only", "dataset",
        "this job has dataset " + p_.dataset);
  if (p_.data_file.empty() && !p_.data_sha256.empty())
    add("data_sha256", "data_sha256 belongs to data_file (the planner fills it in)", "data_file");
  own_model_rules();
  // An HDF5 file says itself whether it holds images or token ids: gridrun-train checks it
  // against the model when it opens the file (and the planner, where the file is visible).
  if (hdf5) return;
  const bool script = model_kind(p_) == ModelKind::file;
  if (p_.input != "auto" && p_.dataset != "synthetic")
    add("input",
        "input=" + p_.input + " applies to dataset=synthetic only (" + p_.dataset + " decides what it gives)",
        "dataset");
  if (p_.input == "tokens" && !script && p_.model != "transformer")
    add("input", "input=tokens needs a model that takes token ids (transformer or torchscript)", "model");
  if (p_.input == "image" && p_.model == "transformer")
    add("input", "input=image, but model=transformer takes token ids", "model");
  if (script) {
    if (p_.input == "tokens" && p_.augment != "none")
      add("augment", "augment=" + p_.augment + " needs images; input=tokens gives token ids", "input");
    return;
  }
  const bool tokens = p_.model == "transformer";
  if (tokens && p_.dataset != "text" && p_.dataset != "synthetic")
    add("dataset",
        "dataset=" + p_.dataset +
            " gives images, but model=transformer takes token ids (use dataset=text "
            "or dataset=synthetic)",
        "model");
  if (!tokens && p_.dataset == "text")
    add("dataset",
        "dataset=text gives token ids, but model=" + p_.model + " takes images (use model=transformer)",
        "model");
  if (tokens && p_.augment != "none")
    add("augment", "augment=" + p_.augment + " needs images; model=transformer reads token ids", "model");
}

void Rules::command_rules() {
  const bool cmd = model_kind(p_) == ModelKind::command;
  if (cmd && p_.command.empty())
    add("model", "model=command is given by a grid's top-level command: (your program's arguments)");
  if (!cmd && !p_.command.empty()) add("command", "command: makes every job model=command", "model");
  if (!cmd) {
    for (const auto* f : {&p_.command_env, &p_.command_sha256, &p_.user_params})
      if (!f->empty())
        add(f == &p_.command_env      ? "command_env"
            : f == &p_.command_sha256 ? "command_sha256"
                                      : "user_params",
            "belongs to a command job (a grid's command:)", "command");
    return;
  }
  // gridrun-train's own keys: a command job runs the user's program, which reads none of them.
  // Placement keys (device, ranks, threads_per_rank, nodes, jobs_per_gpu) and the values a
  // placeholder may pass on (lr, batch_per_rank, epochs, ...) stay.
  const JobParams d;
  auto own = [&](const char* key, bool set) {
    if (set)
      add(key, std::string(key) + " is gridrun-train's; a command job runs your program (pass a value with " +
                   "a {placeholder} in command: instead)");
  };
  own("task", p_.task != d.task);
  own("model_file", !p_.model_file.empty());
  own("data_file", !p_.data_file.empty());
  own("checkpoint", !p_.checkpoint.empty());
  own("quantize", p_.quantize != d.quantize);
  own("cuda_graph", p_.cuda_graph != d.cuda_graph);
  own("memory_format", p_.memory_format != d.memory_format);
  own("profile_steps", p_.profile_steps != d.profile_steps);
  own("augment", p_.augment != d.augment);
  own("input", p_.input != d.input);
}

void Rules::own_model_rules() {
  const bool script = model_kind(p_) == ModelKind::file;
  if (script && p_.model_file.empty())
    add("model", "model=torchscript needs model_file (a TorchScript archive saved with torch.jit.save)",
        "model_file");
  if (!script && !p_.model_file.empty())
    add("model_file", "model_file is read by model=torchscript only", "model",
        "this job has model " + p_.model);
  if (!script && !p_.model_sha256.empty())
    add("model_sha256", "model_sha256 belongs to model=torchscript (the planner fills it in)", "model");
  if (script && p_.quantize != "none")
    add("quantize",
        "quantize=" + p_.quantize +
            " is not available for model=torchscript (gridrun swaps only the linear layers of its own "
            "models)",
        "model");
}

void Rules::cuda_graph_rules() {
  if (!p_.cuda_graph) return;
  const std::string c = "cuda_graph=true needs ";
  if (!train_) add("cuda_graph", c + "task=train", "task", "this job has task " + base::to_string(p_.task));
  if (p_.device != Device::gpu)
    add("cuda_graph", c + "device=gpu", "device", "this job has device " + to_string(p_.device));
  if (p_.ranks != 1) add("cuda_graph", c + "ranks=1 (the gradient allreduce is not captured)", "ranks");
  if (p_.optimizer != "sgd")
    add("cuda_graph", c + "optimizer=sgd (only the foreach SGD step is captured)", "optimizer");
  if (p_.precision == Precision::fp16)
    add("cuda_graph", c + "precision fp32 or bf16 (fp16 loss scaling reads the host every step)",
        "precision");
}

void Rules::jobs_per_gpu_rules() {
  if (p_.jobs_per_gpu == 1) return;
  if (p_.device != Device::gpu)
    add("jobs_per_gpu", "jobs_per_gpu=" + std::to_string(p_.jobs_per_gpu) + " needs device=gpu", "device",
        "this job has device " + to_string(p_.device));
  if (p_.ranks != 1)
    add("jobs_per_gpu",
        "jobs_per_gpu=" + std::to_string(p_.jobs_per_gpu) +
            " needs ranks=1 (a shared GPU runs "
            "one-rank jobs only)",
        "ranks");
}

void Rules::optimizer_rules() {
  if (train_ && p_.optimizer == "sgd" && p_.nesterov && p_.momentum <= 0)
    add("nesterov", "nesterov=true needs momentum > 0", "momentum",
        "this job has momentum " + to_string(Value{p_.momentum}));
}

}  // namespace

std::vector<Problem> check(const JobParams& p) { return Rules(p).run(); }

std::vector<Problem> check_values(const Params& p) {
  std::vector<Problem> out;
  for (const auto& [key, value] : p) {
    const ParamSpec* spec = find_param(key);
    if (!spec) {
      out.push_back({key, "unknown parameter", {}, {}});
      continue;
    }
    if (value.index() != Value(spec->default_value).index()) {
      out.push_back(
          {key,
           std::string("expected ") + (spec->type == Type::Int ? "an " : "a ") + type_name(spec->type),
           {},
           {}});
      continue;
    }
    std::string bad = detail::check_value(*spec, value);
    if (!bad.empty()) out.push_back({key, bad, {}, {}});
  }
  return out;
}

std::optional<Problem> resolve_batch(JobParams& p, BatchGiven given) {
  if (given == BatchGiven::PerRank) {
    const auto gb = base::checked_mul(p.batch_per_rank, p.ranks);
    if (!gb)
      return Problem{"batch_per_rank",
                     product_overflow("batch_per_rank", p.batch_per_rank, "ranks", p.ranks, "global_batch"),
                     "ranks",
                     {}};
    p.global_batch = *gb;
    return std::nullopt;
  }
  if (p.ranks < 1 || p.global_batch % p.ranks != 0)
    return Problem{"global_batch",
                   "global_batch " + std::to_string(p.global_batch) + " is not divisible by ranks " +
                       std::to_string(p.ranks),
                   "ranks", "ranks"};
  p.batch_per_rank = p.global_batch / p.ranks;
  return std::nullopt;
}

double default_lr(const std::string& model, Task task) {
  return model == "lenet" && task == Task::train ? 0.05 : JobParams{}.lr;
}

}  // namespace gridrun::jobs
