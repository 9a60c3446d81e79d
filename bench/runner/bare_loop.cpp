// Reference for the runner-overhead benchmark: the plainest LibTorch training loop over the same
// model and data definitions gridrun-train uses (same factories, same SGD, same batch and threads),
// with no metrics, no communicator, no results file. Prints steady-state samples/s.
//   bench_runner_bare_loop MODEL BATCH STEPS WARMUP THREADS
#include <torch/torch.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "epoch_sampler.hpp"
#include "gridrun/runner/dataset.hpp"
#include "gridrun/runner/model.hpp"
#include "model_cost.hpp"

int main(int argc, char** argv) {
  using namespace gridrun::runner;
  if (argc != 6) {
    std::fprintf(stderr, "usage: %s MODEL BATCH STEPS WARMUP THREADS\n", argv[0]);
    return 2;
  }
  const std::string name = argv[1];
  const std::int64_t batch = std::atoll(argv[2]), steps = std::atoll(argv[3]), warmup = std::atoll(argv[4]);
  torch::set_num_threads(std::atoi(argv[5]));
  torch::manual_seed(0);
  DatasetOptions dopt;
  dopt.tokens = is_text_model(name);
  auto data = make_dataset(dopt);
  gridrun::jobs::JobParams job;  // the model a default job of this name builds
  job.model = name;
  auto model = make_model(model_spec(job, data.input));
  torch::optim::SGD opt(model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9));
  EpochSampler sampler(data.train->size(), batch, 0, 1, 0);
  std::chrono::steady_clock::time_point t0;
  for (std::int64_t s = 0; s < warmup + steps; ++s) {
    if (s == warmup) t0 = std::chrono::steady_clock::now();
    Batch b = data.train->get(sampler.indices(s / sampler.steps_per_epoch(), s % sampler.steps_per_epoch()));
    auto loss = torch::nn::functional::cross_entropy(model->forward(b.x), b.y);
    opt.zero_grad();
    loss.backward();
    opt.step();
    (void)loss.item<float>();
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::printf("%.3f\n", static_cast<double>(steps * batch) / secs);
  return 0;
}
