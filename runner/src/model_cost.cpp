// What a job's model costs (see model_cost.hpp), and the data set options and model spec every job
// builds from its parameters: the harness and `gridrun-train --count-flops` share them here.
#include "model_cost.hpp"

#include <torch/utils.h>

#include <cstdint>
#include <exception>
#include <string>

namespace gridrun::runner {

// A TorchScript model takes what the data gives: token ids from text, from synthetic with
// input=tokens, or from an HDF5 file that holds them; images otherwise.
DatasetOptions dataset_options(const jobs::JobParams& j) {
  const bool script = jobs::model_kind(j) == jobs::ModelKind::file;
  DatasetOptions o;
  o.name = j.dataset;
  o.data_dir = j.data_dir;
  o.train_samples = j.train_samples;
  o.test_samples = j.test_samples;
  o.tokens = is_text_model(j.model) || (script && (j.input == "tokens" || j.dataset == "text"));
  o.data_file = j.data_file;
  o.data_sha256 = j.data_sha256;
  o.tokens_any = script && j.dataset == "hdf5";
  return o;
}

ModelSpec model_spec(const jobs::JobParams& j, const InputInfo& in) {
  ModelSpec spec;
  spec.name = j.model;
  spec.channels = in.channels;
  spec.height = in.height;
  spec.width = in.width;
  spec.num_classes = in.num_classes;
  spec.vocab = in.vocab;
  spec.seq_len = in.seq_len;
  spec.mlp_hidden = parse_mlp_hidden(j.mlp_hidden);
  spec.file = j.model_file;
  spec.sha256 = j.model_sha256;
  return spec;
}

ModelCost model_cost(const jobs::JobParams& j) {
  torch::manual_seed(static_cast<std::uint64_t>(j.seed));
  // Only the input's shape is needed: an HDF5 set stays on disk (read per batch), so the model
  // check that plan runs in a memory-limited child does not hold the user's data in memory.
  DatasetOptions dopts = dataset_options(j);
  dopts.resident_max_bytes = 0;
  dopts.data_sha256.clear();  // plan hashed the file a moment ago; a model check trains nothing
  DataSplits data;
  try {
    data = make_dataset(dopts);
  } catch (const std::exception& e) {
    std::string why = e.what();
    if (why.rfind("gridrun-train: ", 0) == 0) why = why.substr(15);
    throw DataUnreadable(kDataUnreadable + why);
  }
  const auto model = make_model(model_spec(j, data.input));
  return {model->flops_per_sample(), model->parameter_count()};
}

}  // namespace gridrun::runner
