# The panel of bench_predict.sh: NAME|FLAGS|GRID BODY (the grid file without its name). Grids differ
# in model, ranks, threads, policy, parallelism and job length; each is a compare-by grid whose
# phases the prediction must order. Sourced by bench_predict.sh.
# shellcheck disable=SC2034  # read by the sourcing script
BASE='defaults: {dataset: synthetic, device: cpu, threads_per_rank: 1'
SGD='optimizer: sgd, lr: 0.05'
PANEL=(
  "mlp-lenet-short||compare: {by: ranks}
${BASE}, ${SGD}, epochs: 2, train_samples: 1024, test_samples: 256, global_batch: 64}
grid: {model: [mlp, lenet], ranks: [2, 1]}"
  "mlp-lenet-long||compare: {by: ranks}
${BASE}, ${SGD}, epochs: 8, train_samples: 2048, test_samples: 256, global_batch: 64}
grid: {model: [mlp, lenet], ranks: [2, 1]}"
  "lenet-seeds||compare: {by: ranks}
${BASE}, ${SGD}, epochs: 3, train_samples: 2048, test_samples: 512, global_batch: 128, model: lenet}
grid: {seed: [0, 1], ranks: [2, 1]}"
  "mlp-fifo-3|--policy fifo|compare: {by: ranks}
${BASE}, ${SGD}, epochs: 6, train_samples: 2048, test_samples: 256, global_batch: 32, model: mlp}
grid: {seed: [0, 1, 2], ranks: [2, 1]}"
  "lenet-exclusive|--policy exclusive|compare: {by: ranks}
${BASE}, ${SGD}, epochs: 3, train_samples: 1024, test_samples: 256, global_batch: 64, model: lenet}
grid: {seed: [0, 1], ranks: [2, 1]}"
  "threads-vs-ranks||compare: {by: threads_per_rank}
${BASE}, ${SGD}, epochs: 3, train_samples: 2048, test_samples: 256, global_batch: 64, model: lenet, ranks: 1}
grid: {seed: [0, 1], threads_per_rank: [2, 1]}"
  "one-at-a-time|--max-parallel 1|compare: {by: ranks}
${BASE}, ${SGD}, epochs: 3, train_samples: 1024, test_samples: 256, global_batch: 64}
grid: {model: [mlp, lenet], ranks: [2, 1]}"
  "transformer||compare: {by: ranks}
${BASE}, epochs: 2, train_samples: 512, test_samples: 128, global_batch: 32, model: transformer, optimizer: adamw, lr: 0.0005}
grid: {seed: [0, 1], ranks: [2, 1]}"
  "lenet-long||compare: {by: ranks}
${BASE}, ${SGD}, epochs: 4, train_samples: 16384, test_samples: 1024, global_batch: 64, model: lenet}
grid: {seed: [0, 1], ranks: [2, 1]}"
  "resnet18-small||compare: {by: ranks}
${BASE}, ${SGD}, epochs: 1, train_samples: 256, test_samples: 64, global_batch: 32, model: resnet18}
grid: {seed: [0, 1], ranks: [2, 1]}"
  # Grids of a minute or more (issue 44: the calibration at most 25 % of such a grid); the second
  # has six configurations, two launch keys.
  "lenet-minute||compare: {by: ranks}
${BASE}, ${SGD}, epochs: 4, train_samples: 65536, test_samples: 1024, global_batch: 64, model: lenet}
grid: {seed: [0, 1], ranks: [2, 1]}"
  "models-minute||compare: {by: ranks}
${BASE}, ${SGD}, epochs: 5, train_samples: 4096, test_samples: 512, global_batch: 64}
grid: {model: [mlp, lenet, transformer], ranks: [2, 1]}"
)

# Slurm panel (bench_predict.sh --slurm): on the 3-host test cluster (tests/slurm/local-cluster.sh
# start --nodes 3; three namespaces sharing this machine's cores). NAME|SUBMIT FLAGS|GRID BODY;
# "@EXAMPLE" as the body takes examples/large-vs-small-cluster.yaml as it is.
SLURM_PANEL=(
  "cluster-example|--network eth0|@EXAMPLE"
  "cluster-mlp|--network eth0|compare: {by: nodes}
${BASE}, ${SGD}, model: mlp, epochs: 4, train_samples: 2048, test_samples: 256, global_batch: 64}
grid: {seed: [0, 1]}
zip: {ranks: [2, 1], nodes: [2, 1]}"
  "cluster-lenet|--network eth0|compare: {by: nodes}
${BASE}, ${SGD}, model: lenet, epochs: 2, train_samples: 4096, test_samples: 512, global_batch: 64}
grid: {seed: [0, 1]}
zip: {ranks: [2, 1], nodes: [2, 1]}"
)
