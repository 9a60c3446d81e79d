#!/usr/bin/python3
"""Scenario tests for a user's own model and data (issue 33): TorchScript archives and HDF5 data
sets made in the test (own_files.py: python3 + torch + h5py), trained by the real gridrun-train
under a real mpirun.

    own_model.py GRIDRUN_TRAIN SCENARIO [--mpirun MPIRUN] [--work DIR]

    learns        cnn.pt on images.h5 and tiny_transformer.pt on tokens.h5 at 1 and 2 ranks (and
                  cnn.pt on images_f32.h5, no /test group, at 1 rank): completed, final training
                  loss below ln(4)/2, test accuracy >= 0.6, one step row per planned step
    ranks_equal   2 ranks x 16 == 1 rank x 32 over the first 50 steps, per-step loss within 1e-5
                  relative (cnn_plain.pt, cnn_plain.pt with augment crop_flip, tiny_transformer.pt)
    resume        2 ranks, cnn.pt (BatchNorm) on images.h5: SIGKILL of every rank after the first
                  epoch's checkpoint, --resume: the same per-step losses and epoch figures as an
                  undisturbed run
    bad_input     each bad model or data file: exit 2, one line naming the file, results file status
                  failed with that reason; an earlier good job's results file and the input files
                  are untouched, nothing half-written is left
    hdf5_results  the results file records model_file, model_sha256, data_file, model_params and a
                  flops_per_sample of the right size; two files at the same path are two jobs

Each scenario exits 0 on success and 1 with a line starting "FAIL" otherwise. Like scenarios.py:
no sleeps as synchronisation (a scenario that acts mid-run waits for a progress line of the job's
stdout) and no timing assertions. With --work DIR the files stay in DIR/SCENARIO; without it a
temporary folder is removed after a pass and kept (and printed) after a failure.
"""
import argparse
import concurrent.futures
import glob
import json
import math
import os
import shutil
import signal
import subprocess
import sys
import tempfile

import h5py
import numpy as np

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import own_files  # noqa: E402
from scenarios import column, rank_pids  # noqa: E402  (committed rows of a column; an mpirun's ranks)

ARGS = None
LN4 = math.log(own_files.CLASSES)
STEPS_PER_EPOCH = own_files.N_TRAIN // 32


class Fail(AssertionError):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


# --- running gridrun-train -------------------------------------------------------------------------

def train_cmd(np_, *flags):
    return [ARGS.mpirun, "--allow-run-as-root", "--bind-to", "none", "-np", str(np_), ARGS.train,
            *flags]


def run(np_, *flags, expect=0):
    cmd = train_cmd(np_, *flags)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300)
    if expect is not None and p.returncode != expect:
        sys.stderr.write(p.stdout[-4000:] + p.stderr[-4000:])
        raise Fail(f"{' '.join(cmd)}: exit {p.returncode}, expected {expect}")
    return p


def job_flags(job, out, log_every=5):
    return ["--job", job, "--out", out, "--util-hz", "0", "--log-every", str(log_every)]


def params(model, data, ranks=1, batch=32, **kw):
    """Job parameters for a torchscript model on an HDF5 data set (global batch = ranks x batch)."""
    p = {"model": "torchscript", "model_file": ARGS.files[model], "dataset": "hdf5",
         "data_file": ARGS.files[data], "ranks": ranks, "batch_per_rank": batch,
         "global_batch": ranks * batch, "threads_per_rank": 1, "seed": 0,
         "timing_warmup_steps": 2}
    p.update(kw)
    return p


def write_job(d, name, p, **kw):
    path = os.path.join(d, "jobs", name + ".json")
    return path, own_files.job_json(path, p, **kw)


def results_path(out, job_id):
    path = os.path.join(out, job_id + ".h5")
    check(os.path.isfile(path), f"no results file {path}; {out} holds "
          f"{sorted(os.listdir(out)) if os.path.isdir(out) else 'nothing'}")
    return path


def h5(path):
    return h5py.File(path, "r")


def attr(f, name):
    v = f.attrs[name]
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, np.ndarray):
        return v.tolist()
    return v.item() if isinstance(v, np.generic) else v


def summary(f):
    return {k: float(np.asarray(v[()]).reshape(-1)[0]) for k, v in f["summary"].items()}


def workdir(name):
    d = os.path.join(ARGS.work, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def runner_lines(stderr):
    # mpirun adds its own banner; the runner's own lines start with "gridrun-train".
    return [line for line in stderr.splitlines() if line.startswith("gridrun-train")]


CRASH_WORDS = ("terminate called", "Traceback", "Segmentation fault", "core dumped",
               "std::bad_alloc", "Aborted")


def max_rel(a, b):
    a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    return float(np.max(np.abs(a - b) / np.maximum(np.abs(b), 1e-30)))


# --- scenarios -------------------------------------------------------------------------------------

def learns():
    d = workdir("learns")
    cases = [("cnn.pt", "images.h5", dict(optimizer="sgd", lr=0.05, momentum=0.9, epochs=3),
              (1, 2), STEPS_PER_EPOCH),
             ("tiny_transformer.pt", "tokens.h5", dict(optimizer="adam", lr=0.003, epochs=5),
              (1, 2), STEPS_PER_EPOCH),
             # No /test group: the last tenth (64 of 640) is the test split and is not trained on,
             # so an epoch is 576 // 32 = 18 steps (20 would mean the test samples were trained on).
             ("cnn.pt", "images_f32.h5", dict(optimizer="sgd", lr=0.05, momentum=0.9, epochs=3),
              (1,), (own_files.N_TRAIN + own_files.N_TEST) * 9 // 10 // 32)]
    for model, data, hp, ranks_list, spe in cases:
        for ranks in ranks_list:
            name = f"{model[:-3]}_{data[:-3]}_{ranks}"
            job, job_id = write_job(d, name, params(model, data, ranks, 32 // ranks, **hp))
            out = os.path.join(d, name)
            run(ranks, *job_flags(job, out))
            with h5(results_path(out, job_id)) as f:
                status = attr(f, "status")
                loss = column(f, "steps", "loss")
                acc = column(f, "epochs", "test_acc")
                first, last = float(np.mean(loss[:3])), float(np.mean(loss[-5:]))
                print(f"{name}: {len(loss)} steps, loss {first:.3f} -> {last:.3f}, test acc "
                      f"{[round(float(a), 3) for a in acc]}")
                check(status == "completed", f"{name}: status {status}: {attr(f, 'exit_reason')}")
                check(len(loss) == hp["epochs"] * spe,
                      f"{name}: {len(loss)} step rows, expected {hp['epochs']} epochs x {spe}")
                check(np.all(np.isfinite(loss)), f"{name}: non-finite loss {loss}")
                check(1.0 < first < 2.0, f"{name}: first losses {first:.3f}, expected about ln 4 "
                      f"= {LN4:.3f} (cross entropy over 4 classes from random weights)")
                check(last < 0.5 * LN4, f"{name}: final loss {last:.3f} not below ln(4)/2")
                check(len(acc) == hp["epochs"], f"{name}: {len(acc)} epoch rows")
                check(float(acc[-1]) >= 0.6, f"{name}: final test accuracy {acc[-1]:.3f} < 0.6")


def ranks_equal():
    d = workdir("ranks_equal")
    steps, rtol = 50, 1e-5
    hp = dict(optimizer="sgd", lr=0.02, momentum=0.9, epochs=4, max_steps=steps)
    for model, data, extra in (("cnn_plain.pt", "images.h5", {}),
                               ("cnn_plain.pt", "images.h5", {"augment": "crop_flip"}),
                               ("tiny_transformer.pt", "tokens.h5", {})):
        tag = model[:-3] + ("_" + extra["augment"] if extra else "")
        losses = {}
        for ranks in (1, 2):
            name = f"{tag}_{ranks}"
            job, job_id = write_job(d, name, params(model, data, ranks, 32 // ranks, **hp, **extra))
            out = os.path.join(d, name)
            run(ranks, *job_flags(job, out))
            with h5(results_path(out, job_id)) as f:
                check(attr(f, "status") == "completed", f"{name}: status {attr(f, 'status')}")
                losses[ranks] = column(f, "steps", "loss")
            check(len(losses[ranks]) == steps, f"{name}: {len(losses[ranks])} steps, expected {steps}")
        rel = max_rel(losses[2], losses[1])
        print(f"{tag}: 2 ranks x 16 vs 1 rank x 32, {steps} steps: max rel loss diff {rel:.2e} "
              f"(step 1 {losses[1][0]:.6f}, step {steps} {losses[1][-1]:.6f})")
        if rel > rtol:
            i = int(np.argmax(np.abs(losses[2] - losses[1]) / np.abs(losses[1])))
            raise Fail(f"{tag}: step {i + 1}: 1 rank {losses[1][i]!r} vs 2 ranks {losses[2][i]!r} "
                       f"(rel {rel:.2e} > {rtol})")


def resume():
    d = workdir("resume")
    # 60 epochs of 16 steps: the kill, sent once step 18 is on stdout (two steps after the first
    # epoch's checkpoint), lands long before the end even on a fast machine, so where it lands
    # cannot decide the outcome: any later checkpoint (or one half-written) must resume the same.
    epochs = 60
    total = epochs * STEPS_PER_EPOCH
    p_ = params("cnn.pt", "images.h5", 2, 16, optimizer="sgd", lr=0.01, momentum=0.9,
                epochs=epochs)
    job, job_id = write_job(d, "job", p_)
    full_out, cut_out = os.path.join(d, "full", "results"), os.path.join(d, "cut", "results")
    run(2, *job_flags(job, full_out, 50))
    with h5(results_path(full_out, job_id)) as f:
        ref_loss = column(f, "steps", "loss")
        ref_ep = {c: column(f, "epochs", c) for c in ("train_loss", "test_loss", "test_acc")}
    check(len(ref_loss) == total, f"undisturbed run: {len(ref_loss)} steps, expected {total}")

    wait_for = STEPS_PER_EPOCH + 2
    p = subprocess.Popen(train_cmd(2, *job_flags(job, cut_out, 1)), stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    seen = False
    for line in p.stdout:
        if line.startswith(f"step {wait_for}/"):
            seen = True
            break
    if not seen:
        raise Fail(f"job ended before step {wait_for}: exit {p.wait()}: {p.stderr.read()[-2000:]}")
    ckpt_dir = os.path.join(d, "cut", "checkpoints", job_id)
    first_ckpt = os.path.join(ckpt_dir, f"ckpt-{STEPS_PER_EPOCH}", "state.pt")
    check(os.path.isfile(first_ckpt) or glob.glob(os.path.join(ckpt_dir, "ckpt-*", "state.pt")),
          f"step {wait_for} reached but no checkpoint in {ckpt_dir}")
    pids = rank_pids(p.pid)
    check(sorted(pids) == [0, 1], f"rank processes of mpirun {p.pid}: {pids}")
    for pid in pids.values():
        os.kill(pid, signal.SIGKILL)
    rest, err = p.communicate(timeout=120)
    print(f"killed both ranks after step {wait_for}; mpirun exit {p.returncode}")
    check(p.returncode != 0, "mpirun exited 0 after its ranks were killed")
    check(f"step {total}/" not in rest, "the job finished before the kill landed")
    check(not os.path.exists(os.path.join(cut_out, job_id + ".h5")),
          f"a finished results file after the kill: {os.listdir(cut_out)}")
    check(os.path.exists(os.path.join(cut_out, job_id + ".h5.partial")),
          f"no .partial results file after the kill: {os.listdir(cut_out)}")
    ckpts = sorted(int(os.path.basename(c)[5:]) for c in glob.glob(os.path.join(ckpt_dir, "ckpt-*"))
                   if os.path.basename(c)[5:].isdigit())
    print(f"complete checkpoints after the kill: steps {ckpts}")
    check(ckpts and ckpts[-1] < total, f"checkpoints {ckpts}: none mid-run")

    run(2, *job_flags(job, cut_out, 50), "--resume")
    with h5(results_path(cut_out, job_id)) as f:
        status = attr(f, "status")
        steps = column(f, "steps", "step")
        loss = column(f, "steps", "loss")
        ep = {c: column(f, "epochs", c) for c in ref_ep}
        resumed = int(f.attrs["resumed_from_step"]) if "resumed_from_step" in f.attrs else None
    print(f"resumed from step {resumed}: {len(loss)} steps, status {status}")
    check(status == "completed", f"resumed run: status {status}")
    check(resumed is not None and resumed > 1, f"resumed_from_step {resumed}")
    check(list(steps) == list(range(1, total + 1)), f"step column {steps[:5]}..{steps[-5:]} "
          f"({len(steps)} rows), expected 1..{total}")
    rel = max_rel(loss, ref_loss)
    print(f"resume vs undisturbed: max rel per-step loss diff {rel:.2e} over {total} steps")
    if rel > 1e-6:
        i = int(np.argmax(np.abs(loss - ref_loss) / np.abs(ref_loss)))
        raise Fail(f"step {i + 1}: resumed {loss[i]!r} vs undisturbed {ref_loss[i]!r}")
    for c, ref in ref_ep.items():
        check(len(ep[c]) == epochs, f"{len(ep[c])} epoch rows, expected {epochs}")
        # test_loss/test_acc use BatchNorm's running statistics: they must have been checkpointed.
        r = max_rel(ep[c], ref) if c != "test_acc" else float(np.max(np.abs(ep[c] - ref)))
        check(r <= 1e-6, f"epoch {c} differs after resume: {r:.2e}\n{ep[c]}\n{ref}")


def bad_input():
    d = workdir("bad_input")
    out = os.path.join(d, "results")
    files = ARGS.files
    # A good job first, in the same results folder.
    good_job, good_id = write_job(d, "good", params("cnn.pt", "images.h5", epochs=1, max_steps=5))
    run(1, *job_flags(good_job, out))
    good_file = results_path(out, good_id)
    with h5(good_file) as f:
        check(attr(f, "status") == "completed", f"good job: {attr(f, 'status')}")
    good_hash = own_files.sha256(good_file)
    inputs_before = {n: own_files.sha256(p) for n, p in files.items()}

    missing_pt, missing_h5 = os.path.join(d, "nosuch.pt"), os.path.join(d, "nosuch.h5")
    # (case, model, data, extra params, files of which the line must name one)
    cases = [(m[:-3], m, "images.h5", {}, [files[m]]) for m in own_files.BAD_MODELS]
    cases += [("transformer_on_images", "tiny_transformer.pt", "images.h5", {},
               [files["tiny_transformer.pt"], files["images.h5"]]),
              ("wrong_sha256", "cnn.pt", "images.h5", {"model_sha256": "0" * 64},
               [files["cnn.pt"]]),
              # Issue 57: the data file is hashed again by gridrun-train, not trusted from plan's cache.
              ("wrong_data_sha256", "cnn.pt", "images.h5", {"data_sha256": "0" * 64},
               [files["images.h5"]]),
              ("missing_model", "cnn.pt", "images.h5",
               {"model_file": missing_pt, "model_sha256": "0" * 64}, [missing_pt])]
    cases += [(n[:-3] + "_h5", "cnn.pt", n, {}, [files[n]]) for n in own_files.BAD_DATA]
    cases += [("tokens_no_vocab", "tiny_transformer.pt", "tokens_no_vocab.h5", {},
               [files["tokens_no_vocab.h5"]]),
              ("missing_data", "cnn.pt", "images.h5", {"data_file": missing_h5}, [missing_h5])]
    # Checked on rank 0 before any rank trains: a few again at 2 ranks.
    two_ranks = ("wrong_input", "bitflip", "labels_out_of_range_h5")

    # The runs are independent (a job file and a results file each) and most of each is process
    # start-up, so two run at a time (the test holds the cpu_cores lock: both cores are its own);
    # the outcomes are checked and printed in the cases' order.
    runs = []
    for case, model, data, extra, named in cases:
        for ranks in ((1, 2) if case in two_ranks else (1,)):
            label = f"{case} ({ranks} rank{'s' if ranks > 1 else ''})"
            p_ = params(model, data, ranks, 32 // ranks, epochs=1, max_steps=5, **extra)
            job, job_id = write_job(d, f"{case}_{ranks}", p_)
            runs.append((label, ranks, job, job_id, named))
    expected_files = {good_id + ".h5"} | {job_id + ".h5" for _, _, _, job_id, _ in runs}
    with concurrent.futures.ThreadPoolExecutor(max_workers=2) as pool:
        done = list(pool.map(lambda c: run(c[1], *job_flags(c[2], out), expect=None), runs))
    problems = []
    for (label, ranks, job, job_id, named), r in zip(runs, done):
        lines = runner_lines(r.stderr)
        why = None
        try:
            check(r.returncode == 2, f"exit {r.returncode}, expected 2")
            crash = [w for w in CRASH_WORDS if w in r.stderr]
            check(not crash, f"stderr shows a crash ({crash})")
            if ranks == 1:
                check(len(lines) == 1, f"{len(lines)} gridrun-train lines on stderr, expected 1")
            else:
                check(1 <= len(lines) <= 2, f"{len(lines)} gridrun-train lines on stderr")
            naming = [line for line in lines if any(n in line for n in named)]
            check(naming, f"no line names {' or '.join(named)}")
            with h5(results_path(out, job_id)) as f:
                status, why = attr(f, "status"), attr(f, "exit_reason")
            check(status == "failed", f"results file status {status}")
            check(any(n in why for n in named), f"exit_reason does not name the file: {why}")
            check(any(why in line for line in naming),
                  f"exit_reason {why!r} is not the stderr line")
            print(f"{label}: exit 2: {naming[0]}")
        except Fail as e:
            problems.append(f"{label}: {e}\n    stderr: "
                            + "\n    ".join(r.stderr.strip().splitlines()[-6:]))
    check(not problems, "bad input not handled as specified:\n  " + "\n  ".join(problems))

    # Nothing else lost: the good job's file byte for byte, the inputs, no half-written files.
    check(own_files.sha256(good_file) == good_hash, f"the good job's results file changed: {good_file}")
    changed = [n for n, h in inputs_before.items()
               if not os.path.isfile(files[n]) or own_files.sha256(files[n]) != h]
    check(not changed, f"input files moved or changed by gridrun-train: {changed}")
    # gridrun's caches beside the job files (the writers' journal, a reader's index) are no job's.
    left = set(os.listdir(out)) - {".gridrun-journal", ".gridrun-index"}
    check(left == expected_files, f"results folder: unexpected {sorted(left - expected_files)}, "
          f"missing {sorted(expected_files - left)}")


def hdf5_results():
    import torch
    d = workdir("hdf5_results")
    for model, data, ranks in (("cnn.pt", "images.h5", 1), ("tiny_transformer.pt", "tokens.h5", 2)):
        name = model[:-3]
        p_ = params(model, data, ranks, 32 // ranks, epochs=1, max_steps=8)
        job, job_id = write_job(d, name, p_)
        out = os.path.join(d, name)
        run(ranks, *job_flags(job, out))
        n_params = sum(t.numel() for t in torch.jit.load(ARGS.files[model]).parameters())
        analytic = own_files.analytic_flops(name)
        with h5(results_path(out, job_id)) as f:
            check(attr(f, "status") == "completed", f"{name}: status {attr(f, 'status')}")
            want = {"param.model": "torchscript", "param.model_file": ARGS.files[model],
                    "param.model_sha256": p_.get("model_sha256") or own_files.sha256(ARGS.files[model]),
                    "param.dataset": "hdf5", "param.data_file": ARGS.files[data]}
            for k, v in want.items():
                check(k in f.attrs, f"{name}: no root attribute {k}")
                check(attr(f, k) == v, f"{name}: {k} = {attr(f, k)!r}, expected {v!r}")
            pj = json.loads(attr(f, "params"))
            for k in ("model_file", "model_sha256", "data_file"):
                check(pj.get(k) == want["param." + k], f"{name}: params JSON {k} = {pj.get(k)!r}")
            summ = summary(f)
            fl = float(f.attrs["flops_per_sample"]) if "flops_per_sample" in f.attrs else None
            mp = int(f.attrs["model_params"]) if "model_params" in f.attrs else None
        print(f"{name}: flops_per_sample {fl} (attr) {summ.get('flops_per_sample')} (summary), "
              f"analytic {analytic}; model_params {mp} (torch: {n_params})")
        check(fl is not None and fl > 0, f"{name}: root attribute flops_per_sample {fl}")
        check(summ.get("flops_per_sample", 0) > 0, f"{name}: /summary/flops_per_sample {summ}")
        # The model's own count, per sample: within a factor 4 of the convolutions, linear layers
        # and attention products counted by hand (a per-batch count would be 16-32x off).
        check(analytic / 4 <= fl <= analytic * 4,
              f"{name}: flops_per_sample {fl} not within 4x of the analytic {analytic}")
        if "train_flops_per_sample" in summ:
            check(abs(summ["train_flops_per_sample"] - 3 * fl) <= 1e-6 * fl,
                  f"{name}: train_flops_per_sample {summ['train_flops_per_sample']} != 3 x {fl}")
        check(mp == n_params, f"{name}: model_params {mp}, the TorchScript module has {n_params}")

    # The file's content is part of the job: the same path with other content is another job (id
    # recomputed from the parameters, model_sha256 included, when run from flags).
    path = os.path.join(d, "mine.pt")
    out = os.path.join(d, "same_path")
    ids = {}
    for src in ("cnn.pt", "cnn_plain.pt"):
        shutil.copyfile(ARGS.files[src], path)
        h = own_files.sha256(path)
        run(1, "--model", "torchscript", "--model-file", path, "--model-sha256", h,
            "--dataset", "hdf5", "--data-file", ARGS.files["images.h5"], "--epochs", "1",
            "--max-steps", "2", "--batch-per-rank", "32", "--threads-per-rank", "1",
            "--out", out, "--util-hz", "0", "--quiet")
        for res in glob.glob(os.path.join(out, "*.h5")):
            with h5(res) as f:
                if attr(f, "param.model_sha256") == h:
                    ids[src] = attr(f, "id")
        check(src in ids, f"no results file in {out} records model_sha256 {h}: {os.listdir(out)}")
    print(f"same path, two contents: job ids {ids}")
    check(len(set(ids.values())) == 2, f"two different files at one path got one job id: {ids}")


SCENARIOS = {f.__name__: f for f in (learns, ranks_equal, resume, bad_input, hdf5_results)}


def main():
    global ARGS
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("train", help="the gridrun-train binary")
    ap.add_argument("scenario", choices=sorted(SCENARIOS))
    ap.add_argument("--mpirun", default=shutil.which("mpirun") or "mpirun")
    ap.add_argument("--work", help="work folder (kept); default: a temporary one")
    ARGS = ap.parse_args()
    ARGS.train = os.path.abspath(ARGS.train)
    keep = ARGS.work is not None
    ARGS.work = os.path.abspath(ARGS.work) if keep else tempfile.mkdtemp(prefix="gridrun-own-model-")
    os.makedirs(ARGS.work, exist_ok=True)
    ARGS.files = own_files.make_all(os.path.join(ARGS.work, ARGS.scenario + "_files"))
    try:
        SCENARIOS[ARGS.scenario]()
    except (Fail, AssertionError, subprocess.TimeoutExpired) as e:
        print(f"FAIL {ARGS.scenario}: {e}", file=sys.stderr)
        print(f"(files kept in {ARGS.work})", file=sys.stderr)
        return 1
    if not keep:
        shutil.rmtree(ARGS.work, ignore_errors=True)
    print("ok", ARGS.scenario)
    return 0


if __name__ == "__main__":
    sys.exit(main())
