#!/usr/bin/env bash
# `gridrun submit/status/cancel` flag handling without a Slurm cluster: --help, bad flags and values
# exit 2 naming the flag, a bad grid exits 2 and writes nothing, --dry-run writes and prints the
# scripts and submits nothing (no sbatch needed).
#   scenario_cli.sh BIN_DIR WORK_DIR
source "$(dirname "$0")/lib.sh"
BIN=$1 WORK=$2
rm -rf "$WORK" && mkdir -p "$WORK"
cd "$WORK"
expect_exit() {  # expect_exit CODE PATTERN CMD...
  local code=$1 pat=$2; shift 2
  set +e
  "$@" >out.txt 2>err.txt
  local rc=$?
  set -e
  [[ $rc -eq $code ]] || { cat out.txt err.txt >&2; fail "'$*' exited $rc, expected $code"; }
  grep -q -- "$pat" out.txt err.txt || { cat out.txt err.txt >&2; fail "'$*': no '$pat' in output"; }
}
for c in submit status cancel; do expect_exit 0 "usage: gridrun $c" "$BIN/gridrun" "$c" --help; done
expect_exit 0 "--pack-nodes" "$BIN/gridrun" submit --help
cat >grid.yaml <<'YAML'
name: cli
defaults: {model: mlp, dataset: synthetic, device: cpu}
grid:
  ranks: [1, 2]
YAML
expect_exit 2 "--bogus" "$BIN/gridrun" submit grid.yaml --slurm --bogus
expect_exit 2 "--launcher" "$BIN/gridrun" submit grid.yaml --slurm --launcher ssh
expect_exit 2 "--time" "$BIN/gridrun" submit grid.yaml --slurm --time 1:xx
expect_exit 2 "--max-array" "$BIN/gridrun" submit grid.yaml --slurm --max-array 0
expect_exit 2 "--max-array" "$BIN/gridrun" submit grid.yaml --slurm --max-array 2000000
[[ ! -e runs ]] || fail "a rejected --max-array left runs/ behind"
expect_exit 2 "--launch" "$BIN/gridrun" submit grid.yaml --slurm --launch tepid
expect_exit 2 "--jobs-per-task" "$BIN/gridrun" submit grid.yaml --slurm --jobs-per-task 0
# A warm worker's task messages are JSON: a run directory that is not UTF-8 is refused up front.
expect_exit 2 "not valid UTF-8" "$BIN/gridrun" submit grid.yaml --slurm --launch warm --out $'runs/latin1-\xe9'
expect_exit 2 "not valid UTF-8" "$BIN/gridrun" run grid.yaml --launch warm --out $'runs/latin1-\xe9'
[[ ! -e runs ]] || fail "a rejected --launch, --jobs-per-task or non-UTF-8 --out left runs/ behind"
expect_exit 2 "--signal" "$BIN/gridrun" submit grid.yaml --slurm --signal 'USR1 @ 5'
expect_exit 2 "--template" "$BIN/gridrun" submit grid.yaml --slurm --template missing.txt
expect_exit 2 "--format" "$BIN/gridrun" status . --format xml
expect_exit 2 "--wait" "$BIN/gridrun" cancel . --wait -1
expect_exit 2 "not a directory" "$BIN/gridrun" status missing-run
cat >bad.yaml <<'YAML'
name: bad
grid:
  rnaks: [1, 2]
YAML
expect_exit 2 "rnaks" "$BIN/gridrun" submit bad.yaml --slurm --out runs
[[ ! -e runs/bad ]] || fail "a bad grid left runs/bad behind"
# Script injection (issue 24): each value below would have put shell code or a broken line into
# the scripts; each exits 2 naming the flag, and writes no script and no run directory.
printf '#SBATCH --mem=1G\nmodule load x\n#SBATCH --exclusive\n' >late.txt
printf '#SBATCH --mem=1G\n\033[2Jecho\n' >ctl.txt
injections=(
  "--sbatch-arg|--sbatch-arg=--mem=1G"$'\n'"touch /tmp/gridrun-injected"
  "--partition|--partition=x; y"
  "--partition|--partition=debug"$'\n'"touch /tmp/gridrun-injected"
  "--account|--account=a b"
  "--qos|--qos=\$(id)"
  "--constraint|--constraint=gpu#x"
  "--time|--time=1:00:00"$'\n'"x"
  "--train-bin|--train-bin=/opt/t"$'\n'"rm -rf /"
  "--out|--out=runs"$'\n'"x"
  "--set|--set=data_dir=x"$'\n'"touch /tmp/gridrun-injected"
  "--only|--only=data_dir=x"$'\n'"touch /tmp/gridrun-injected"
  "--sbatch-arg|--sbatch-arg=--array=0-3"
  "late.txt:3|--template=late.txt"
  "ctl.txt:2|--template=ctl.txt"
)
for case in "${injections[@]}"; do
  out=(--out inj)
  [[ ${case%%|*} == --out ]] && out=()
  expect_exit 2 "${case%%|*}" "$BIN/gridrun" submit grid.yaml --slurm "${out[@]}" --dry-run "${case#*|}"
  [[ ! -e inj && ! -e runs$'\n'x ]] || fail "'${case#*|}' left files behind"
done
[[ ! -e /tmp/gridrun-injected ]] || fail "an injected command ran"
printf '#SBATCH --mail-type=FAIL\nmodule load openmpi\n' >site.txt
expect_exit 0 "nothing submitted" "$BIN/gridrun" submit grid.yaml --slurm --out runs --dry-run \
  --partition debug --template site.txt --sbatch-arg=--mem=1G --max-array 1
grep -q "#SBATCH --partition=debug" out.txt || fail "dry run did not print the scripts"
scripts=(runs/cli/slurm/s1-a*.sbatch)
[[ ${#scripts[@]} -eq 2 ]] || fail "expected 2 array scripts"
grep -q "module load openmpi" runs/cli/slurm/s1-a0-cpu-r1-t1.sbatch || fail "template missing"
grep -q "#SBATCH --mem=1G" runs/cli/slurm/s1-a0-cpu-r1-t1.sbatch || fail "--sbatch-arg missing"
# sbatch reads directives only up to the first command: every #SBATCH line (the template's and
# --sbatch-arg's) must come before the template's 'module load'.
awk '/^#SBATCH/ && cmd {bad=1} /^[^#]/ && NF {cmd=1} END {exit bad}' runs/cli/slurm/s1-a0-cpu-r1-t1.sbatch ||
  fail "an #SBATCH line follows a command: sbatch would ignore it"
[[ ! -e runs/cli/slurm/submitted.tsv ]] || fail "dry run recorded a submission"
# The resubmit hint repeats the submission's --set and --only (issue 34): without them the same
# command would submit other jobs (--set is part of every id) or the rest of the grid.
expect_exit 0 "nothing submitted" "$BIN/gridrun" submit grid.yaml --slurm --out part --dry-run \
  --set epochs=2 --only ranks=2
here=$(pwd -P)  # as gridrun makes paths absolute
grep -qxF "#   gridrun submit $here/grid.yaml --slurm --out $here/part --set epochs=2 --only ranks=2" \
  part/cli/slurm/s1-a0-cpu-r2-t1.sbatch || fail "the resubmit hint lacks --set/--only"
bash -n runs/cli/slurm/s1-a0-cpu-r1-t1.sbatch || fail "generated script is not valid bash"
expect_exit 0 "2 pending" "$BIN/gridrun" status runs/cli
echo "PASS"
