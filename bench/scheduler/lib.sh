# shellcheck shell=bash
# What the scheduler benchmarks share (sourced): a build's two binaries, checked, and a work folder
# under /tmp that goes on exit unless --keep.

# bench_binaries NAME BUILD: sets GRIDRUN and TRAIN; exits 2 when the build has not made them.
bench_binaries() {
  GRIDRUN=$2/bin/gridrun
  TRAIN=$2/bin/gridrun-train
  [[ -x $GRIDRUN && -x $TRAIN ]] || { echo "$1: build first ($GRIDRUN)" >&2; exit 2; }
}

# bench_work NAME: sets WORK to a fresh folder.
bench_work() { WORK=$(mktemp -d "/tmp/gridrun-bench-$1-XXXXXX"); }

# bench_drop_work NAME KEEP: removes WORK, or says where it is when KEEP is 1.
bench_drop_work() {
  if (($2)); then echo "$1: work folder kept: $WORK" >&2; else rm -rf "$WORK"; fi
}
