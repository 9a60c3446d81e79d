// Checkpoints: everything needed to continue a run bit-for-bit on the same number of ranks.
//
// Layout under the checkpoint dir:  ckpt-<global step>/state.pt   model, optimizer, TrainState
//                                   ckpt-<global step>/rng-<rank>.pt   each rank's RNG state(s)
// A checkpoint is written into `ckpt-<step>.tmp/`, all ranks meet at a barrier, then rank 0 renames
// the folder (atomic on POSIX file systems) and deletes older checkpoints; a reader only ever sees
// complete checkpoints. The learning-rate schedule is a function of the step, so it needs no state.
#pragma once

#include <cstdint>
#include <string>

#include "gridrun/runner/communicator.hpp"
#include "gridrun/runner/model.hpp"

namespace torch::optim {
class Optimizer;
}

namespace gridrun::runner {

// The loop's position and running figures, saved with every checkpoint.
struct TrainState {
  std::int64_t epoch = 0;          // 0-based epoch in progress
  std::int64_t step_in_epoch = 0;  // steps of `epoch` already done
  std::int64_t global_step = 0;    // steps done in total
  double wall_s = 0;               // training wall time spent before this process started
  double epoch_loss_sum = 0, epoch_correct = 0, epoch_count = 0, epoch_s = 0;
  double best_test_acc = -1;
  std::int64_t world = 1;
  double loss_scale = 65536.0;  // fp16 dynamic loss scale
};

class Checkpointer {
 public:
  Checkpointer(std::string dir, Communicator& comm);
  // Collective: every rank calls it at the same step.
  void save(Model& model, torch::optim::Optimizer& opt, const TrainState& st);
  // Loads the newest complete checkpoint, if any (returns false when there is none). One that
  // cannot be read is renamed ckpt-<step>.damaged with a warning and the next one is tried.
  // Throws BadInput when it was written by a different number of ranks.
  bool load(Model& model, torch::optim::Optimizer& opt, TrainState& st);
  std::string latest() const;  // path of the newest complete checkpoint folder, "" if none

 private:
  void load_from(const std::string& path, Model& model, torch::optim::Optimizer& opt, TrainState& st);
  // Rank 0 reads `path` in a separate `gridrun-train --check-checkpoint` process first: "" when it
  // read cleanly, else why not (a crash or hang of LibTorch's reader included).
  std::string trial_read(const std::string& path) const;

  std::string dir_;
  Communicator& comm_;
};

// `gridrun-train --check-checkpoint DIR`: reads state.pt (model, optimizer, train state) and every
// rng-*.pt of the folder with no model to load them into. Throws (std::exception or c10::Error) on
// a file it cannot read; may also crash or hang on a hostile one, which is why it runs alone.
void read_checkpoint_files(const std::string& dir);

// Inference (`checkpoint` parameter): the state.pt file `spec` names: a checkpoint file itself; a
// folder holding state.pt (one ckpt-<step>); a checkpoint folder (its newest complete ckpt-<step>);
// or a training job id, looked up as <out_dir>/../checkpoints/<id>/. Throws BadInput naming the
// paths tried when none holds a checkpoint.
std::string resolve_checkpoint(const std::string& spec, const std::string& out_dir);
// Loads only the model's parameters and buffers from a checkpoint file (no optimizer, no loop
// state, any number of ranks). Throws BadInput when the file does not fit the model.
void load_model_weights(const std::string& state_file, Model& model);

}  // namespace gridrun::runner
