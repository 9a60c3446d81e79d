# shellcheck shell=bash
# What the scheduler benchmarks share (sourced): their command line read by one flag table, a
# build's two binaries, checked, and a work folder under /tmp that goes on exit unless --keep.

# The build the benchmarks measure: the repository's build/ unless --build DIR (bench_flags).
# shellcheck disable=SC2034  # read by the scripts that source this file
BUILD=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build

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

# bench_flags NAME HELP ARG...: reads the script's command line (ARG...) by the flag table on stdin,
# one flag a line: "--flag VAR" takes a value into VAR; "--flag VAR=VALUE ..." is a switch that sets
# each VAR to its VALUE; every benchmark also takes --build DIR (into BUILD). -h/--help prints
# lines HELP (a sed range, e.g. 2,8) of the script; an
# unknown argument, or a flag without its value, exits 2 naming it.
bench_flags() {
  local name=$1 help=$2 flag rest
  local -A takes=() switches=()
  local -a sets=()
  shift 2
  takes[--build]=BUILD
  while read -r flag rest; do
    if [[ $rest == *=* ]]; then switches[$flag]=$rest; else takes[$flag]=$rest; fi
  done
  while [[ $# -gt 0 ]]; do
    if [[ $1 == -h || $1 == --help ]]; then
      sed -n "${help}p" "$0"
      exit 0
    elif [[ -n $1 && -n ${takes[$1]:-} ]]; then
      [[ $# -ge 2 ]] || { echo "$name: $1 needs a value" >&2; exit 2; }
      printf -v "${takes[$1]}" '%s' "$2"
      shift 2
    elif [[ -n $1 && -n ${switches[$1]:-} ]]; then
      read -ra sets <<<"${switches[$1]}"
      for rest in "${sets[@]}"; do printf -v "${rest%%=*}" '%s' "${rest#*=}"; done
      shift
    else
      echo "$name: unknown argument $1 (see --help)" >&2
      exit 2
    fi
  done
}
