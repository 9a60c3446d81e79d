# shellcheck shell=bash
# shellcheck disable=SC2034  # job, out, resume and id are read by the stand-in that sources this
# Sourced by the stand-ins for gridrun-train (fake-*-train.sh): reads the flags the task body gives
# a job (--job RUN/jobs/<id>.json --out RUN/results [--resume] [...]) into job, out, resume and id.
job="" out="" resume=0
while (($#)); do
  case "$1" in
    --job) job=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --resume) resume=1; shift ;;
    *) shift ;;
  esac
done
id=$(basename "$job" .json)
