#!/usr/bin/env bash
# data_stand_ins.sh DIR: empty stand-ins of the built-in data sets' files the examples name, under
# DIR/data/ as their data_dir says (data/cifar-10-batches-bin, data/text). `gridrun plan` checks
# that those files exist (issue 58); planning reads nothing of them.
set -euo pipefail
dir=$1
mkdir -p "$dir/data/cifar-10-batches-bin" "$dir/data/text"
for f in data_batch_1.bin data_batch_2.bin data_batch_3.bin data_batch_4.bin data_batch_5.bin test_batch.bin; do
  : >"$dir/data/cifar-10-batches-bin/$f"
done
: >"$dir/data/text/train.tsv"
: >"$dir/data/text/test.tsv"
