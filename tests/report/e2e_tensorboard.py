#!/usr/bin/env python3
"""`gridrun export --format tensorboard` read back by the tensorboard package's own readers.

Runs a four-job grid (mlp on synthetic data, lr x ranks: 1 and 2 ranks, seconds) with the real
`gridrun run`, exports it with --format tensorboard, and reads the folder with TensorBoard's
EventAccumulator (what `tensorboard --logdir` loads) and its raw record loader:

- one run folder per job, named by the job id (then the varying parameters), one event file each,
  named events.out.tfevents.<time>.<host>.<pid>.<n>, plus the experiment file in the root;
- every record passes TensorBoard's checksums: the loader reads as many events as gridrun says it
  wrote (and stops early on a copy with one byte flipped: the checksums are really checked);
- the scalars equal the job's HDF5 file (h5py): every /steps column at its step (steps strictly
  increasing), rank_step_s per rank, every /epochs column at its epoch, the utilization means of
  each epoch, the /summary figures; values as float32, the type a TensorBoard scalar has;
- hparams: each run's session_start_info holds the job's parameters (the file's `params`), its
  session_end_info the status; the experiment lists the parameters that vary (lr, ranks and
  batch_per_rank) and the metrics;
- exporting again into the same folder replaces the event files (one per folder, no duplicates);
- flags: --what with --format tensorboard, no --out, --out in a missing folder: exit 2 naming it.

The utilization means are checked on both runs, but required only of the run MAKE_RUN
(gridrun-test-make-run) fabricates with the real JobWriter: its /util samples fall in each epoch
whatever the machine's speed, while a real job of a fraction of a second may end an epoch between
two samples of the 10 Hz sampler.

    e2e_tensorboard.py GRIDRUN GRIDRUN_TRAIN MAKE_RUN
"""
import glob
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

import h5py
import numpy as np
from tensorboard.backend.event_processing import event_accumulator as ea
from tensorboard.backend.event_processing import event_file_loader
from tensorboard.plugins.hparams import metadata as hp_metadata
from tensorboard.plugins.hparams import plugin_data_pb2

GRIDRUN, TRAIN, MAKE_RUN = sys.argv[1:4]
FAILED = []
GRID = """name: tb
defaults:
  dataset: synthetic
  model: mlp
  device: cpu
  threads_per_rank: 1
  epochs: 2
  train_samples: 256
  test_samples: 64
  global_batch: 32
  optimizer: sgd
grid:
  lr: [0.05, 0.1]
  ranks: [1, 2]
seeds: [0]
"""
FILE_NAME = re.compile(r"^events\.out\.tfevents\.\d+\..+\.\d+\.\d+$")


def check(cond, what):
    if not cond:
        FAILED.append(what)
        print("FAIL:", what)
    return cond


def gridrun(*args):
    return subprocess.run([GRIDRUN, *args], capture_output=True, text=True, timeout=300)


def f32(v):
    return float(np.float32(v))


def same(a, b):
    """A TensorBoard scalar (float32) and the HDF5 value it was made from."""
    if math.isnan(b):
        return math.isnan(a)
    return a == f32(b)


def load(run_dir):
    acc = ea.EventAccumulator(run_dir, size_guidance={ea.SCALARS: 0, ea.TENSORS: 0})
    acc.Reload()
    return acc


def event_files(folder):
    return sorted(f for f in os.listdir(folder) if "tfevents" in f)


def raw_events(path):
    return sum(1 for _ in event_file_loader.RawEventFileLoader(path).Load())


def scalars(acc, tag):
    return [(e.step, e.value) for e in acc.Scalars(tag)] if tag in acc.Tags()["scalars"] else []


def hparams_data(acc, tag):
    content = acc.PluginTagToContent(hp_metadata.PLUGIN_NAME).get(tag)
    return plugin_data_pb2.HParamsPluginData.FromString(content) if content is not None else None


def check_steps(name, acc, f):
    steps = f["steps"]
    n = int(steps["rows"][0])
    step = steps["step"][:n]
    check(n > 0, f"{name}: the job has step rows")
    for col, ds in steps.items():
        if col in ("rows", "step", "epoch", "wall_s"):
            continue
        if ds.ndim == 1:
            series = {col: ds[:n]}
        else:
            series = {f"{col}/{r}": ds[:n, r] for r in range(ds.shape[1])}
        for tag_end, values in series.items():
            got = scalars(acc, f"step/{tag_end}")
            if not check(len(got) == n, f"{name}: step/{tag_end} has {len(got)} points, the file {n} rows"):
                continue
            check([s for s, _ in got] == [int(s) for s in step], f"{name}: step/{tag_end} at the file's steps")
            check(all(b > a for (a, _), (b, _) in zip(got, got[1:])), f"{name}: step/{tag_end} steps increase")
            bad = [i for i, ((_, v), h) in enumerate(zip(got, values)) if not same(v, float(h))]
            check(not bad, f"{name}: step/{tag_end} equals /steps/{col} (first difference at row {bad[:1]})")


def util_means(f, epoch_end):
    """Per epoch, each /util column's mean over the epoch's samples (of the mean over ranks)."""
    util = f["util"]
    n = int(util["rows"][0])
    t = util["time_s"][:n]
    out = {}
    for col, ds in util.items():
        if col in ("rows", "time_s"):
            continue
        per_sample = ds[:n] if ds.ndim == 1 else np.array([np.nanmean(r) if np.isfinite(r).any() else np.nan
                                                            for r in ds[:n]])
        means = []
        start = 0.0
        for end in epoch_end:
            window = per_sample[(t > start) & (t <= end)]
            window = window[np.isfinite(window)]
            means.append(float(window.mean()) if len(window) else None)
            start = end
        out[col] = means
    return out


def check_epochs(name, acc, f):
    epochs = f["epochs"]
    n = int(epochs["rows"][0])
    epoch = [int(e) for e in epochs["epoch"][:n]]
    check(n == 2, f"{name}: 2 epoch rows")
    for col, ds in epochs.items():
        if col in ("rows", "epoch", "wall_s"):
            continue
        got = scalars(acc, f"epoch/{col}")
        if check([s for s, _ in got] == epoch, f"{name}: epoch/{col} at epochs {epoch}: {got}"):
            check(all(same(v, float(h)) for (_, v), h in zip(got, ds[:n])), f"{name}: epoch/{col} equals the file")
    util_seen = 0
    for col, means in util_means(f, [float(w) for w in epochs["wall_s"][:n]]).items():
        expected = [(e, m) for e, m in zip(epoch, means) if m is not None]
        got = scalars(acc, f"util/{col}")
        util_seen += len(got)
        ok = [s for s, _ in got] == [e for e, _ in expected]
        ok = ok and all(math.isclose(v, m, rel_tol=1e-6, abs_tol=1e-6) for (_, v), (_, m) in zip(got, expected))
        check(ok, f"{name}: util/{col} {got} is the epochs' mean {expected}")
    return util_seen


def check_summary(name, acc, f):
    step = f["steps"]["step"][: int(f["steps"]["rows"][0])]
    for fig, ds in f["summary"].items():
        v = float(ds[0])
        got = scalars(acc, f"summary/{fig}")
        if fig.endswith("_unix") or not math.isfinite(v):
            check(not got, f"{name}: summary/{fig} is left out (an instant or not finite)")
            continue
        check(len(got) == 1 and got[0][0] == int(step[-1]) and same(got[0][1], v),
              f"{name}: summary/{fig} {got} is {v} at the last step")
    check(scalars(acc, "summary/samples_per_s"), f"{name}: summary/samples_per_s present")


def check_hparams(name, acc, f):
    params = json.loads(f.attrs["params"])
    start = hparams_data(acc, hp_metadata.SESSION_START_INFO_TAG)
    if not check(start is not None and start.HasField("session_start_info"), f"{name}: session_start_info"):
        return
    hp = start.session_start_info.hparams
    for key in ("lr", "ranks", "model", "batch_per_rank", "epochs"):
        v = hp[key]
        kind = v.WhichOneof("kind")
        got = v.number_value if kind == "number_value" else v.string_value if kind == "string_value" else v.bool_value
        check(got == params[key], f"{name}: hparam {key} {got!r} is the job's {params[key]!r}")
    end = hparams_data(acc, hp_metadata.SESSION_END_INFO_TAG)
    ok = f.attrs["status"] in ("completed", "target_reached")
    check(end is not None and end.session_end_info.status == (1 if ok else 2),
          f"{name}: session_end_info status for {f.attrs['status']}")


def check_experiment(tb):
    acc = load(tb)
    x = hparams_data(acc, hp_metadata.EXPERIMENT_TAG)
    if not check(x is not None and x.HasField("experiment"), "root: the hparams experiment"):
        return
    names = [h.name for h in x.experiment.hparam_infos]
    check(names == ["batch_per_rank", "lr", "ranks"], f"experiment hparams are the varying ones: {names}")
    lr = [h for h in x.experiment.hparam_infos if h.name == "lr"][0]
    check([v.number_value for v in lr.domain_discrete.values] == [0.05, 0.1], "experiment: lr's values")
    metrics = [m.name.tag for m in x.experiment.metric_infos]
    check(metrics[:3] == ["epoch/test_acc", "epoch/test_loss", "epoch/train_loss"] and
          "summary/samples_per_s" in metrics, f"experiment metrics: {metrics}")


def check_export(tb, run_dir, said, need_util):
    job_files = sorted(glob.glob(os.path.join(run_dir, "results", "*.h5")))
    folders = sorted(d for d in os.listdir(tb) if os.path.isdir(os.path.join(tb, d)))
    check(len(job_files) == 4 and len(folders) == len(job_files), f"one run per job: {folders}")
    events = 0
    for name in event_files(tb):
        check(FILE_NAME.match(name), f"root file name {name}")
        events += raw_events(os.path.join(tb, name))
    util_seen = 0
    for path in job_files:
        job_id = os.path.basename(path)[:-3]
        match = [d for d in folders if d == job_id or d.startswith(job_id + "_")]
        if not check(len(match) == 1, f"a run folder for job {job_id}: {folders}"):
            continue
        folder = os.path.join(tb, match[0])
        files = event_files(folder)
        check(len(files) == 1 and FILE_NAME.match(files[0]), f"{match[0]}: one event file, so named: {files}")
        events += sum(raw_events(os.path.join(folder, n)) for n in files)
        acc = load(folder)
        with h5py.File(path, "r") as f:
            check("lr=" in match[0] and "ranks=" in match[0], f"{match[0]}: the varying parameters in the name")
            check_steps(match[0], acc, f)
            util_seen += check_epochs(match[0], acc, f)
            check_summary(match[0], acc, f)
            check_hparams(match[0], acc, f)
    if need_util:
        check(util_seen > 0, f"{run_dir}: utilization means in the export")
    m = re.search(r"\((\d+) events\)", said)
    check(m and int(m.group(1)) == events,
          f"TensorBoard's loader reads every event gridrun wrote ({events}; gridrun said {said.strip()!r})")
    check_experiment(tb)


def check_checksums_are_checked(tb):
    """A flipped byte stops TensorBoard's loader: a full count above means the checksums held."""
    folder = next(os.path.join(tb, d) for d in sorted(os.listdir(tb)) if os.path.isdir(os.path.join(tb, d)))
    path = os.path.join(folder, event_files(folder)[0])
    good = raw_events(path)
    bad = path + ".flipped.tfevents"
    data = bytearray(open(path, "rb").read())
    data[len(data) // 2] ^= 0xFF
    with open(bad, "wb") as out:
        out.write(data)
    check(raw_events(bad) < good, "one flipped byte makes TensorBoard's loader stop early")
    os.remove(bad)


def check_flags(run_dir, tmp):
    for args, needle in [(["--what", "steps", "--out", os.path.join(tmp, "x")], "--what"),
                         ([], "--out"),
                         (["--out", os.path.join(tmp, "missing", "tb")], "--out")]:
        p = gridrun("export", run_dir, "--format", "tensorboard", *args)
        check(p.returncode == 2 and needle in p.stderr, f"export --format tensorboard {args}: exit 2 naming {needle}: "
              f"{p.returncode} {p.stderr.strip()}")


def main():
    tmp = tempfile.mkdtemp(prefix="gridrun-tb-")
    try:
        grid = os.path.join(tmp, "tb.yaml")
        with open(grid, "w") as out:
            out.write(GRID)
        p = subprocess.run([GRIDRUN, "run", grid, "--out", os.path.join(tmp, "runs"), "--train-bin", TRAIN,
                            "--no-report"], capture_output=True, text=True, timeout=600)
        if not check(p.returncode == 0, f"gridrun run: exit {p.returncode}\n{p.stdout[-2000:]}\n{p.stderr[-2000:]}"):
            return 1
        run_dir = os.path.join(tmp, "runs", "tb")
        tb = os.path.join(tmp, "tb")
        p = gridrun("export", run_dir, "--format", "tensorboard", "--out", tb)
        if not check(p.returncode == 0, f"export: exit {p.returncode}: {p.stderr}"):
            return 1
        check(p.stdout == "", "export --format tensorboard prints nothing on stdout")
        check_export(tb, run_dir, p.stderr, need_util=False)
        check_checksums_are_checked(tb)
        # Again into the same folder: the new files replace the old ones.
        p = gridrun("export", run_dir, "--format", "tensorboard", "--out", tb + "/")
        check(p.returncode == 0, f"second export: exit {p.returncode}: {p.stderr}")
        check_export(tb, run_dir, p.stderr, need_util=False)
        check_flags(run_dir, tmp)
        # The fabricated run: the same grid's jobs, /util samples inside every epoch.
        subprocess.run([MAKE_RUN, grid, os.path.join(tmp, "made")], check=True, capture_output=True, timeout=300)
        made = os.path.join(tmp, "made", "tb")
        p = gridrun("export", made, "--format", "tensorboard", "--out", os.path.join(tmp, "tb-made"))
        if check(p.returncode == 0, f"export of the fabricated run: exit {p.returncode}: {p.stderr}"):
            check_export(os.path.join(tmp, "tb-made"), made, p.stderr, need_util=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("FAILED:" if FAILED else "ok:", len(FAILED), "checks failed")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
