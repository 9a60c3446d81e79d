// The checkpoint reader's fuzz target (issue 24): bytes written as a checkpoint file, then read as
// `gridrun-train` reads one (runner::load_model_weights: LibTorch's zip archive and pickle reader,
// then the model's parameters by name and shape; Checkpointer::load reads the same archive the
// same way before it looks at the loop state). Kept apart from targets.cpp because it is the one
// target that needs LibTorch.
#include <stdexcept>

#include "checkpoint.hpp"
#include "gridrun/runner/errors.hpp"
#include "gridrun/runner/model.hpp"
#include "targets.hpp"

namespace gridrun::fuzz {

Verdict checkpoint(const std::uint8_t* d, std::size_t n, const TargetOptions&) {
  // One small model for every input: building it per input would be most of the time per run.
  // The seed (corpus/checkpoint/seed-mlp16-state.pt) is a real checkpoint of that model:
  // gridrun-train --model mlp --mlp-hidden 16 --max-steps 4 --train-samples 64 --checkpoint-dir D
  static const std::shared_ptr<runner::Model> model = [] {
    runner::ModelSpec s;
    s.name = "mlp";
    s.mlp_hidden = {16};  // on the default 3x32x32 synthetic images: the committed seed's model
    return runner::make_model(s);
  }();
  const std::string file = write_scratch_file("state.pt", d, n);
  // BadInput: "checkpoint ... does not fit model (...)"; the archive check: "PATH: damaged: ...".
  return judge("state.pt", [&] { runner::load_model_weights(file, *model); });
}

Verdict model_file(const std::uint8_t* d, std::size_t n, const TargetOptions&) {
  // model=torchscript's file (issue 33), read as gridrun-train reads it: the archive check, then
  // torch::jit::load, the forward's signature and one trial forward. The seed
  // (corpus/model_file/seed-cnn.pt) is tests/runner/own_files.py's cnn.pt: 3x16x16 images, 4 classes.
  const std::string file = write_scratch_file("model.pt", d, n);
  runner::ModelSpec s;
  s.name = "torchscript";
  s.file = file;
  s.channels = 3;
  s.height = s.width = 16;
  s.num_classes = 4;
  return judge("model.pt", [&] { runner::make_model(s); });
}

}  // namespace gridrun::fuzz
