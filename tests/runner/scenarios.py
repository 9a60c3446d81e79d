#!/usr/bin/python3
"""Scenario tests for gridrun-train: the real binary under a real `mpirun -np 2`.

Each scenario is one ctest entry (`scenarios.py NAME`). They assert on exit codes, messages, the
final parameters (--dump-params: raw float32 in registration order) and the HDF5 results file
(read with Debian's h5py). No sleeps as synchronisation: a scenario that must act mid-run waits for
a progress line on the job's stdout. No timing assertions: the 60 s bound for a killed rank is the
ctest TIMEOUT of that entry.
"""
import argparse
import glob
import os
import shutil
import signal
import subprocess
import sys

import numpy as np

ARGS = None


def train_cmd(np_, *flags):
    base = [ARGS.mpirun, "--allow-run-as-root", "--bind-to", "none", "-np", str(np_), ARGS.train]
    return base + list(flags)


def run(np_, *flags, expect=0):
    cmd = train_cmd(np_, *flags)
    p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=200)
    if expect is not None and p.returncode != expect:
        sys.stderr.write(p.stdout[-4000:] + p.stderr[-4000:])
        raise AssertionError(f"{' '.join(cmd)}: exit {p.returncode}, expected {expect}")
    return p


def workdir(name):
    d = os.path.join(ARGS.work, name)
    shutil.rmtree(d, ignore_errors=True)
    os.makedirs(d)
    return d


def params(path):
    return np.fromfile(path, dtype=np.float32)


def h5(path):
    import h5py
    return h5py.File(path, "r")


def results_file(out):
    files = glob.glob(os.path.join(out, "*.h5"))
    assert len(files) == 1, f"expected one finished results file in {out}, got {os.listdir(out)}"
    return files[0]


def column(f, group, name):
    """Committed rows of one column (the writer keeps a rows counter beside the columns)."""
    ds = f[group][name][()]
    if "rows" in f[group]:
        n = int(np.asarray(f[group]["rows"][()]).reshape(-1)[0])
        ds = ds[:n]
    return ds


def attr(f, name):
    v = f.attrs[name]
    return v.decode() if isinstance(v, bytes) else str(v)


def common(out, *extra):
    return ["--dataset", "synthetic", "--threads-per-rank", "1", "--out", out,
            "--log-every", "5", "--util-hz", "0", *extra]


# --- scenarios -------------------------------------------------------------------------------------

def equivalence(model, bucket_mb):
    """2 ranks x batch b == 1 rank x batch 2b after 20 steps, overlap on and off, several buckets."""
    d = workdir(f"equivalence_{model}")
    b = 8
    flags = ["--model", model, "--epochs", "1", "--max-steps", "20", "--train-samples", "512",
             "--test-samples", "64", "--lr", "0.02", "--momentum", "0.9", "--seed", "3",
             "--bucket-mb", str(bucket_mb)]
    run(1, *common(d + "/one"), *flags, "--ranks", "1", "--batch-per-rank", str(2 * b),
        "--dump-params", d + "/one.bin")
    ref = params(d + "/one.bin")
    for overlap in ("true", "false"):
        run(2, *common(d + "/two" + overlap), *flags, "--ranks", "2", "--batch-per-rank", str(b),
            "--overlap", overlap, "--dump-params", d + f"/two{overlap}.bin")
        got = params(d + f"/two{overlap}.bin")
        assert got.shape == ref.shape
        diff = float(np.abs(got - ref).max())
        print(f"{model} overlap={overlap}: max abs param diff {diff:.3g} over {ref.size} params")
        assert diff < 1e-5, diff
        with h5(results_file(d + "/two" + overlap)) as f:
            assert attr(f, "status") == "completed"
            assert len(column(f, "steps", "step")) == 20
            buckets = int(f.attrs["grad_buckets"])
            print(f"  {buckets} gradient buckets")
            assert buckets >= 3, buckets


def equivalence_mlp():
    equivalence("mlp", 0.004)    # 4 KB cap: fc3, fc2 and fc1 each close a bucket -> 3


def equivalence_lenet():
    equivalence("lenet", 0.02)   # 248 KB of parameters -> 3 buckets


def loss_halves():
    for model, lr, epochs in (("mlp", "0.002", "3"), ("lenet", "0.003", "6")):
        d = workdir(f"loss_{model}")
        run(2, *common(d), "--model", model, "--ranks", "2", "--batch-per-rank", "32",
            "--optimizer", "adam", "--epochs", epochs, "--lr", lr, "--train-samples", "2048",
            "--test-samples", "512")
        with h5(results_file(d)) as f:
            loss = column(f, "steps", "loss")
            first, last = float(np.mean(loss[:3])), float(np.mean(loss[-5:]))
            acc = column(f, "epochs", "test_acc")
            print(f"{model}: loss {first:.3f} -> {last:.3f}, test acc {acc}")
            assert last <= 0.5 * first, (first, last)


def resnet18_np2():
    d = workdir("resnet18")
    run(2, *common(d), "--model", "resnet18", "--ranks", "2", "--batch-per-rank", "4",
        "--epochs", "1", "--max-steps", "3", "--train-samples", "64", "--test-samples", "16",
        "--eval-every", "0")
    with h5(results_file(d)) as f:
        loss = column(f, "steps", "loss")
        assert len(loss) == 3 and np.all(np.isfinite(loss)), loss
        assert attr(f, "status") == "completed"


def resume_equals_uninterrupted():
    d = workdir("resume")
    flags = ["--model", "mlp", "--ranks", "2", "--batch-per-rank", "16", "--epochs", "2",
             "--train-samples", "256", "--test-samples", "64", "--lr", "0.05", "--seed", "5"]
    run(2, *common(d + "/full"), *flags, "--dump-params", d + "/full.bin")
    p = run(2, *common(d + "/cut"), *flags, "--stop-after-step", "5", expect=75)
    assert "checkpoint at step 5" in p.stdout, p.stdout
    assert glob.glob(d + "/checkpoints/*/ckpt-5/state.pt"), os.listdir(d)
    partial = glob.glob(d + "/cut/*.h5")
    with h5(partial[0]) as f:
        assert attr(f, "status") == "interrupted"
    run(2, *common(d + "/cut"), *flags, "--resume", "--dump-params", d + "/cut.bin")
    diff = float(np.abs(params(d + "/full.bin") - params(d + "/cut.bin")).max())
    print(f"resume: max abs param diff {diff:.3g}")
    assert diff < 1e-6, diff
    with h5(results_file(d + "/cut")) as f:
        steps = column(f, "steps", "step")
        assert attr(f, "status") == "completed"
        assert list(steps) == list(range(1, 17)), steps


def resume_at_epoch_end():
    """A stop at the last step of an epoch (and of the run) resumes into that epoch's end: every
    epoch has its row, with the same train loss as the uninterrupted run (once a stop there
    skipped the epoch row and carried the epoch's sums into the next one)."""
    flags = ["--model", "mlp", "--ranks", "2", "--batch-per-rank", "16", "--epochs", "2",
             "--train-samples", "256", "--test-samples", "64", "--lr", "0.05", "--seed", "5"]
    full = workdir("resume_epoch_full")
    run(2, *common(full + "/out"), *flags, "--dump-params", full + "/p.bin")
    with h5(results_file(full + "/out")) as f:
        ref_loss = column(f, "epochs", "train_loss")
    for stop in (8, 16):  # 8 steps per epoch: the end of epoch 1, and of the run
        d = workdir(f"resume_epoch_{stop}")
        run(2, *common(d + "/out"), *flags, "--stop-after-step", str(stop), expect=75)
        run(2, *common(d + "/out"), *flags, "--resume", "--dump-params", d + "/p.bin")
        diff = float(np.abs(params(full + "/p.bin") - params(d + "/p.bin")).max())
        with h5(results_file(d + "/out")) as f:
            epochs = list(column(f, "epochs", "epoch"))
            loss = column(f, "epochs", "train_loss")
            assert attr(f, "status") == "completed"
            assert list(column(f, "steps", "step")) == list(range(1, 17))
        print(f"stop at {stop}: epochs {epochs}, train loss {loss} vs {ref_loss}, param diff {diff:.3g}")
        assert epochs == [1, 2], epochs
        assert np.allclose(loss, ref_loss, rtol=1e-6, atol=0), (loss, ref_loss)
        assert diff < 1e-6, diff


def job_file_and_target():
    """A job file as the planner writes it (params, run, meta) drives the run; target_accuracy stops
    it early with status target_reached and exit 0."""
    d = workdir("jobfile")
    run(1, *common(d + "/probe"), "--model", "mlp", "--optimizer", "adam", "--lr", "0.002",
        "--epochs", "10", "--train-samples", "1024", "--test-samples", "256",
        "--target-accuracy", "0.5", "--max-steps", "1")
    with h5(results_file(d + "/probe")) as f:
        params_json = attr(f, "params")
    import json
    params = json.loads(params_json)
    params["max_steps"] = 0
    jobs = os.path.join(d, "run", "jobs")
    os.makedirs(jobs)
    job = {"id": "0123456789ab", "run": "scen", "index": 0, "params": params,
           "meta": {"host": "testhost", "cores": "0"}}
    path = os.path.join(jobs, "job.json")
    with open(path, "w") as fh:
        json.dump(job, fh)
    run(1, "--job", path, "--out", os.path.join(d, "run", "results"), "--util-hz", "0")
    with h5(results_file(os.path.join(d, "run", "results"))) as f:
        assert attr(f, "run") == "scen"
        assert attr(f, "meta.host") == "testhost"
        assert attr(f, "status") == "target_reached", attr(f, "status")
        epochs = column(f, "epochs", "epoch")
        acc = column(f, "epochs", "test_acc")
        print("target reached after epochs", list(epochs), "acc", list(acc))
        assert attr(f, "id") == "0123456789ab"
        assert len(epochs) < 10 and acc[-1] >= 0.5


def rank_pids(mpirun_pid):
    """PIDs of gridrun-train processes started by this mpirun, by MPI rank."""
    out = {}
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            with open(f"/proc/{pid}/stat") as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid != mpirun_pid:
                continue
            with open(f"/proc/{pid}/environ", "rb") as f:
                env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
            out[int(env[b"OMPI_COMM_WORLD_RANK"])] = int(pid)
        except (OSError, KeyError, IndexError, ValueError):
            pass
    return out


def start_and_wait_for_step(cmd, step):
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    for line in p.stdout:
        if line.startswith(f"step {step}/"):
            return p
    raise AssertionError(f"job ended before step {step}: {p.wait()} {p.stderr.read()}")


def external_sigterm():
    """SIGTERM sent from outside to every rank (as Slurm does): checkpoint, exit 75, resume."""
    d = workdir("sigterm")
    # 30 epochs (1920 steps): the signal sent at step 3 lands long before the end even on a fast
    # machine, so the exit code cannot depend on speed.
    flags = common(d + "/out", "--model", "lenet", "--ranks", "2", "--batch-per-rank", "16",
                   "--epochs", "30", "--train-samples", "2048", "--test-samples", "64",
                   "--eval-every", "0")
    flags[flags.index("--log-every") + 1] = "1"
    p = start_and_wait_for_step(train_cmd(2, *flags), 3)
    pids = rank_pids(p.pid)
    assert sorted(pids) == [0, 1], pids
    for pid in pids.values():
        os.kill(pid, signal.SIGTERM)
    rest, err = p.communicate(timeout=120)
    assert p.returncode == 75, (p.returncode, err[-2000:])
    assert "interrupted by signal" in rest
    run(2, *flags, "--resume")
    with h5(results_file(d + "/out")) as f:
        steps = column(f, "steps", "step")
        assert attr(f, "status") == "completed"
        assert list(steps) == list(range(1, len(steps) + 1)) and len(steps) == 30 * 64


def sigkill_one_rank():
    d = workdir("sigkill")
    flags = common(d + "/out", "--model", "lenet", "--ranks", "2", "--batch-per-rank", "16",
                   "--epochs", "50", "--train-samples", "2048", "--test-samples", "64")
    flags[flags.index("--log-every") + 1] = "1"
    p = start_and_wait_for_step(train_cmd(2, *flags), 3)
    pids = rank_pids(p.pid)
    os.kill(pids[1], signal.SIGKILL)
    _, err = p.communicate()   # bounded by this test's ctest TIMEOUT (60 s)
    print("mpirun exit", p.returncode, err.strip().splitlines()[-1:] if err else "")
    assert p.returncode != 0
    assert glob.glob(d + "/out/*.h5.partial") or glob.glob(d + "/out/*.h5")


def rank_exception():
    d = workdir("exception")
    p = run(2, *common(d), "--model", "mlp", "--ranks", "2", "--max-steps", "50", "--epochs", "0",
            "--fail-at-step", "3", "--fail-rank", "1", expect=None)
    assert p.returncode == 1, p.returncode
    assert "rank 1" in p.stderr and "injected failure" in p.stderr, p.stderr[-2000:]


def hung_collective():
    d = workdir("hang")
    p = run(2, *common(d), "--model", "mlp", "--ranks", "2", "--max-steps", "50", "--epochs", "0",
            "--hang-at-step", "3", "--fail-rank", "1", "--comm-timeout-s", "3", expect=None)
    assert p.returncode != 0
    assert "did not complete within 3 s" in p.stderr, p.stderr[-2000:]


def bad_input():
    d = workdir("bad")
    p = run(1, "--out", d, "--no-such-flag", "1", expect=2)
    assert "no-such-flag" in p.stderr, p.stderr
    p = run(1, "--out", d, "--model", "nosuch", expect=2)
    assert "--model" in p.stderr, p.stderr
    p = run(2, "--out", d, "--ranks", "2", "--dataset", "cifar10", "--data-dir", d + "/nodata",
            expect=2)
    assert "data_batch_1.bin" in p.stderr, p.stderr
    # device=gpu where it cannot run: a CPU build, or a CUDA build on a machine without a GPU (the
    # CUDA lane of scripts/test.sh). Exit 2 with one clear line, never a crash at load. A CUDA build
    # with a GPU trains there instead (gpu_* scenarios).
    if not ARGS.cuda or gpu_count() == 0:
        p = run(1, "--out", d, "--device", "gpu", expect=2)
        assert "device=gpu" in p.stderr, p.stderr
        if ARGS.cuda:
            assert "no usable GPU" in p.stderr or "no CUDA device" in p.stderr, p.stderr
    p = run(2, "--out", d, "--ranks", "1", expect=2)
    assert "ranks=1" in p.stderr, p.stderr
    # A failure before training still leaves a results file saying so (never a half-written one).
    assert not glob.glob(d + "/*.partial"), os.listdir(d)
    files = glob.glob(d + "/*.h5")
    assert files, f"no results file in {d}: {os.listdir(d)}"  # a loop over none would pass
    for f in files:
        with h5(f) as h:
            assert attr(h, "status") == "failed", (f, attr(h, "status"))


def profile_ops():
    """profile_steps: /profile holds the expected operators with calls > 0, and the Chrome trace is
    valid JSON with complete ("X") events; the summary has FLOPs and bytes per sample."""
    import json
    for model, op in (("mlp", "aten::addmm"), ("lenet", "conv")):
        d = workdir(f"profile_{model}")
        run(1, *common(d), "--model", model, "--batch-per-rank", "16", "--epochs", "1",
            "--max-steps", "8", "--train-samples", "256", "--test-samples", "64",
            "--timing-warmup-steps", "2", "--profile-steps", "2")
        with h5(results_file(d)) as f:
            names = [n.decode() if isinstance(n, bytes) else str(n)
                     for n in f["profile"]["name"][()]]
            calls = f["profile"]["calls"][()]
            self_us, total_us = f["profile"]["self_cpu_us"][()], f["profile"]["total_cpu_us"][()]
            hit = [i for i, n in enumerate(names) if op in n]
            print(model, "top ops", names[:5], "matching", [names[i] for i in hit])
            assert hit, names
            assert all(calls[i] > 0 for i in hit), calls
            assert np.all(self_us <= total_us + 1e-6)
            assert np.all(f["profile"]["self_device_us"][()] == 0)
            summ = {k: float(v[0]) for k, v in f["summary"].items()}
            assert summ["bytes_per_sample"] > 0 and summ["flops_per_sample"] > 0, summ
            job_id = attr(f, "id")
        with open(os.path.join(d, job_id + ".profile.json")) as fh:
            trace = json.load(fh)
        ev = trace["traceEvents"]
        assert ev and all(e["ph"] == "X" and e["dur"] >= 0 for e in ev), ev[:3]
        assert any(op in e["name"] for e in ev)


def mfu_peak():
    """/summary/mfu = flops_per_s / peak, the peak from a `gridrun probe` file (CPU: the cores the
    job used at the 1-thread GEMM rate) or from --peak-tflops; the GPU names attribute is absent on
    CPU; a missing --probe file is exit 2 naming the flag."""
    import json
    d = workdir("mfu")
    probe = os.path.join(d, "probe.json")
    with open(probe, "w") as fh:
        json.dump({"created": "2026-01-01T00:00:00Z", "hostname": "h", "cpu_model": "m",
                   "threads": 2, "gemm_n": 512, "triad_elems": 1024, "gemm_gflops_1t": 10.0,
                   "gemm_gflops_all": 18.0, "triad_gbs_1t": 5.0, "triad_gbs_all": 9.0}, fh)
    job = ["--model", "mlp", "--batch-per-rank", "16", "--epochs", "1", "--max-steps", "8",
           "--train-samples", "256", "--test-samples", "64", "--timing-warmup-steps", "2"]
    for sub, extra, ranks, peak in (("probe1", ["--probe", probe], 1, 10e9),
                                    ("probe2", ["--probe", probe], 2, 18e9),
                                    ("flag", ["--peak-tflops", "0.02", "--probe", probe], 1, 20e9)):
        out = os.path.join(d, sub)
        run(ranks, *common(out), *job, "--ranks", str(ranks), *extra)
        with h5(results_file(out)) as f:
            summ = {k: float(v[0]) for k, v in f["summary"].items()}
            assert "gpu_names" not in f.attrs
        assert abs(summ["peak_flops"] - peak) < 1e-3 * peak, (sub, summ["peak_flops"], peak)
        assert abs(summ["mfu"] - summ["flops_per_s"] / peak) < 1e-9, (sub, summ)
        assert 0 < summ["mfu"] < 10, summ
    p = run(1, *common(os.path.join(d, "bad")), *job, "--probe", os.path.join(d, "nope.json"),
            expect=2)
    assert "--probe" in p.stderr, p.stderr


def inference_from_checkpoint():
    """task=inference from a training job's checkpoint (by job id) reproduces that job's final test
    accuracy exactly; a missing checkpoint is exit 2 naming it, with no results file."""
    d = workdir("infer_ckpt")
    train = common(d + "/results") + ["--model", "mlp", "--optimizer", "adam", "--lr", "0.002",
                                      "--epochs", "2", "--batch-per-rank", "32",
                                      "--train-samples", "512", "--test-samples", "200"]
    run(1, *train)
    with h5(results_file(d + "/results")) as f:
        job_id = attr(f, "id")
        final_acc = float(column(f, "epochs", "test_acc")[-1])
        final_loss = float(column(f, "epochs", "test_loss")[-1])
    # Sample counts that do not divide evenly: 200 test samples over 2 ranks, batch 16. The same
    # train_samples: the synthetic generator draws both splits from one stream.
    out = d + "/infer"
    run(2, *common(out), "--task", "inference", "--model", "mlp", "--ranks", "2",
        "--batch-per-rank", "16", "--train-samples", "512", "--test-samples", "200",
        "--infer-batches", "10", "--timing-warmup-steps", "2", "--checkpoint", job_id)
    # --out's parent holds checkpoints/<id>: the id resolves relative to the inference --out.
    with h5(results_file(out)) as f:
        acc = float(column(f, "epochs", "test_acc")[-1])
        loss = float(column(f, "epochs", "test_loss")[-1])
        summ = {k: float(v[0]) for k, v in f["summary"].items()}
        steps = column(f, "steps", "step")
        print(f"train final acc {final_acc} loss {final_loss}; inference acc {acc} loss {loss}")
        assert acc == final_acc, (acc, final_acc)
        assert abs(loss - final_loss) < 1e-6, (loss, final_loss)
        assert summ["test_samples_seen"] == 200, summ
        assert list(steps) == list(range(1, 13)), steps
        assert 0 < summ["latency_p50_s"] <= summ["latency_p90_s"] <= summ["latency_p99_s"], summ
        assert summ["samples_per_s"] > 0 and summ["peak_rss_bytes"] > 0
        assert attr(f, "status") == "completed"
        assert column(f, "steps", "rank_step_s").shape[1] == 2
    bad = d + "/bad"
    p = run(1, *common(bad), "--task", "inference", "--checkpoint", d + "/nosuch/state.pt",
            expect=2)
    assert d + "/nosuch/state.pt" in p.stderr, p.stderr
    p = run(1, *common(bad), "--task", "inference", "--checkpoint", "ffffffffffff", expect=2)
    assert "ffffffffffff" in p.stderr, p.stderr
    assert not glob.glob(bad + "/*.partial"), os.listdir(bad)
    files = glob.glob(bad + "/*.h5")
    assert files, f"no results file in {bad}: {os.listdir(bad)}"  # a loop over none would pass
    for f in files:
        with h5(f) as h:
            assert attr(h, "status") == "failed" and "checkpoint" in attr(h, "exit_reason"), f


def inference_random_np2():
    """Inference on 2 ranks, fp32 and int8 (dynamic quantization of lenet's 3 linear layers).

    Random weights (no checkpoint): both complete over every test sample. Random weights cannot show
    that int8 agrees with fp32: such a lenet predicts nearly one class for every input (accuracy
    ~0.1 in both, whatever int8 does). So the agreement is checked on a trained checkpoint (2 epochs,
    test accuracy ~0.74 on the synthetic task, well above chance 0.1), run from it in fp32 and int8
    with batch 1 per rank over every test sample once, each writing every sample's logits
    (--dump-logits). A quantizer that did nothing would pass an agreement check alone, so int8 must
    also change things: the packed int8 weights, read back, differ from fp32 in nearly every element
    (int8_weights_changed), and no sample's logits are bit-identical to fp32's. Agreement: the same
    argmax on >= 95 % of the 256 samples (measured: all 256), logits within 0.5 of fp32's
    (measured max 0.05; 58916 of 58920 weights changed), each /steps row's loss (2 samples' cross-entropy) within 0.1 of fp32's and
    the accuracies within 0.02."""
    lenet_linear_weights = 400 * 120 + 120 * 84 + 84 * 10  # fc1..fc3 (conv layers stay fp32)
    for q in ("none", "int8"):
        d = workdir(f"infer_random_{q}")
        run(2, *common(d), "--task", "inference", "--model", "lenet", "--ranks", "2",
            "--batch-per-rank", "8", "--test-samples", "64", "--infer-batches", "4",
            "--quantize", q)
        with h5(results_file(d)) as f:
            assert attr(f, "status") == "completed"
            summ = {k: float(v[0]) for k, v in f["summary"].items()}
            assert summ["test_samples_seen"] == 64, summ
            assert int(f.attrs["quantized_linear_layers"]) == (3 if q == "int8" else 0)
            assert int(f.attrs["quantized_linear_weights"]) == (
                lenet_linear_weights if q == "int8" else 0), dict(f.attrs)

    d = workdir("infer_int8_trained")
    data = ["--train-samples", "1024", "--test-samples", "256"]
    run(1, *common(d + "/results"), "--model", "lenet", "--optimizer", "adam", "--lr", "0.003",
        "--epochs", "2", "--batch-per-rank", "32", *data)
    with h5(results_file(d + "/results")) as f:
        job_id = attr(f, "id")
        trained_acc = float(column(f, "epochs", "test_acc")[-1])
    accs, losses, logits, changed = {}, {}, {}, {}
    for q in ("none", "int8"):
        out = f"{d}/infer_{q}"
        dump = f"{d}/logits_{q}.f32"
        # 128 batches of 1 per rank: each of the 256 test samples exactly once, none timed twice.
        run(2, *common(out), "--task", "inference", "--model", "lenet", "--ranks", "2",
            "--batch-per-rank", "1", *data, "--infer-batches", "128", "--timing-warmup-steps", "0",
            "--quantize", q, "--checkpoint", job_id, "--dump-logits", dump)
        with h5(results_file(out)) as f:
            assert attr(f, "status") == "completed"
            assert int(f.attrs["quantized_linear_layers"]) == (3 if q == "int8" else 0)
            summ = {k: float(v[0]) for k, v in f["summary"].items()}
            assert summ["test_samples_seen"] == 256, summ
            accs[q] = float(column(f, "epochs", "test_acc")[-1])
            losses[q] = column(f, "steps", "loss").astype(np.float64)
            changed[q] = int(f.attrs["int8_weights_changed"])
        raw = np.fromfile(dump, dtype=np.float32)
        assert raw.size == 256 * 10, (dump, raw.size)
        logits[q] = raw.reshape(256, 10)
        assert np.isfinite(logits[q]).all(), (q, np.argwhere(~np.isfinite(logits[q]))[:5])
    diff = np.abs(losses["int8"] - losses["none"])
    same_argmax = float(np.mean(logits["int8"].argmax(1) == logits["none"].argmax(1)))
    logit_diff = np.abs(logits["int8"].astype(np.float64) - logits["none"])
    rows_changed = int(np.any(logits["int8"] != logits["none"], axis=1).sum())
    print(f"trained lenet (job {job_id}, test acc {trained_acc:.4f}): inference acc fp32 "
          f"{accs['none']:.4f} int8 {accs['int8']:.4f}; per-pair loss |int8 - fp32| max "
          f"{diff.max():.4f} mean {diff.mean():.4f} over {diff.size} pairs; int8 weights changed "
          f"{changed['int8']} of {lenet_linear_weights}; same argmax {same_argmax:.4f}; logits "
          f"|int8 - fp32| max {logit_diff.max():.4f} mean {logit_diff.mean():.5f}, samples with "
          f"logits changed {rows_changed}/256")
    # int8 really is int8: the packed weights differ from fp32 (an element equal to its int8 grid
    # point stays; the rest, nearly all, move), and so does every sample's output.
    assert changed["none"] == 0, changed
    assert changed["int8"] >= 0.9 * lenet_linear_weights, changed
    assert rows_changed == 256, rows_changed
    # The checkpoint's weights in fp32: the training's final accuracy, up to a near-tie sample that
    # batch 1 (here) and the training's evaluation batch may round differently.
    assert abs(accs["none"] - trained_acc) <= 0.01, (accs, trained_acc)
    assert accs["none"] >= 0.5, accs  # a model whose predictions mean something
    # ... and int8 predicts as fp32 does, sample by sample.
    assert same_argmax >= 0.95, same_argmax
    assert logit_diff.max() <= 0.5, logit_diff.max()
    assert len(losses["none"]) == len(losses["int8"]) == 128, {q: len(v) for q, v in losses.items()}
    assert np.isfinite(losses["none"]).all() and np.isfinite(losses["int8"]).all()
    assert diff.max() <= 0.1 and diff.mean() <= 0.03, (diff.max(), diff.mean())
    assert abs(accs["int8"] - accs["none"]) <= 0.02, accs
    # The dump is an inference flag: a training job with it is bad input, naming the flag.
    p = run(1, *common(d + "/bad"), "--model", "lenet", "--epochs", "1", *data,
            "--dump-logits", d + "/x.f32", expect=2)
    assert "--dump-logits" in p.stderr, p.stderr
    assert not os.path.exists(d + "/x.f32")


# --- GPU scenarios (label gpu): skip with a reason (exit 77) without a CUDA build or a GPU ---------

SKIP = 77


def gpu_count():
    try:
        p = subprocess.run(["nvidia-smi", "-L"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                           text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return 0
    return sum(1 for line in p.stdout.splitlines() if line.startswith("GPU "))


def need_gpus(n):
    if not ARGS.cuda:
        print("SKIP: gridrun-train was built without CUDA/NCCL (GRIDRUN_WITH_CUDA)")
        sys.exit(SKIP)
    have = gpu_count()
    if have < n:
        print(f"SKIP: no GPU" + (f" (needs {n}, nvidia-smi lists {have})" if have else ""))
        sys.exit(SKIP)


def gpu_common(out, *extra):
    return ["--dataset", "synthetic", "--device", "gpu", "--out", out, "--log-every", "10",
            "--util-hz", "20", *extra]


def gpu_train_1rank():
    """One rank on the GPU over the NCCL communicator: completes, learns, records GPU facts."""
    need_gpus(1)
    d = workdir("gpu_train")
    # 768 steps: at lr 0.01 lenet can sit on its initial plateau for the first ~100 (the H200,
    # 2026-11-26: 96 steps went 2.305 -> 2.299 in one run and learned in the next).
    run(1, *gpu_common(d), "--model", "lenet", "--epochs", "3", "--lr", "0.01",
        "--batch-per-rank", "32", "--train-samples", "8192", "--test-samples", "512")
    with h5(results_file(d)) as f:
        assert attr(f, "status") == "completed", attr(f, "status")
        assert attr(f, "communicator") == "nccl"
        assert attr(f, "gpu_names"), "no gpu_names attribute"
        loss = column(f, "steps", "loss")
        assert np.all(np.isfinite(loss)), loss
        first, last = float(np.mean(loss[:5])), float(np.mean(loss[-5:]))
        print(f"gpu lenet: loss {first:.3f} -> {last:.3f}, {len(loss)} steps")
        assert last < 0.8 * first, (first, last)
        assert float(column(f, "epochs", "test_acc")[-1]) > 0.5
        for c in ("forward_s", "backward_s", "optimizer_s", "step_s"):
            v = column(f, "steps", c)
            assert np.all(v > 0) and np.all(np.isfinite(v)), (c, v[:5])


def gpu_matches_cpu():
    """fp32 on the GPU follows the CPU run's losses (same weights, same batches, same math)."""
    need_gpus(1)
    d = workdir("gpu_vs_cpu")
    flags = ["--model", "mlp", "--epochs", "1", "--max-steps", "30", "--train-samples", "1024",
             "--test-samples", "64", "--lr", "0.01", "--seed", "5", "--batch-per-rank", "32"]
    run(1, *common(d + "/cpu"), *flags)
    run(1, *gpu_common(d + "/gpu"), *flags, "--tf32", "false")
    with h5(results_file(d + "/cpu")) as c, h5(results_file(d + "/gpu")) as g:
        lc, lg = column(c, "steps", "loss"), column(g, "steps", "loss")
        rel = float(np.max(np.abs(lc - lg) / np.abs(lc)))
        print(f"cpu vs gpu loss, 30 steps: max rel diff {rel:.2e}")
        assert rel < 1e-3, rel


def gpu_cuda_graph():
    """cuda_graph=true replays the captured step: same losses as the eager step, fewer launches."""
    need_gpus(1)
    d = workdir("gpu_graph")
    flags = ["--model", "resnet18", "--epochs", "1", "--max-steps", "40", "--train-samples", "2048",
             "--test-samples", "64", "--lr", "0.01", "--seed", "2", "--batch-per-rank", "32",
             "--tf32", "false", "--cudnn-benchmark", "false"]
    run(1, *gpu_common(d + "/eager"), *flags)
    run(1, *gpu_common(d + "/graph"), *flags, "--cuda-graph", "true")
    with h5(results_file(d + "/eager")) as e, h5(results_file(d + "/graph")) as g:
        le, lg = column(e, "steps", "loss"), column(g, "steps", "loss")
        assert len(le) == len(lg) == 40
        rel = float(np.max(np.abs(le - lg) / np.abs(le)))
        print(f"eager vs graph loss: max rel diff {rel:.2e}")
        assert rel < 1e-3, rel
        assert attr(g, "status") == "completed"


def gpu_nccl_np2():
    """Two ranks on two GPUs: data-parallel over NCCL equals one rank at twice the batch."""
    need_gpus(2)
    d = workdir("gpu_np2")
    flags = ["--model", "lenet", "--epochs", "1", "--max-steps", "20", "--train-samples", "512",
             "--test-samples", "64", "--lr", "0.02", "--seed", "3", "--tf32", "false"]
    run(1, *gpu_common(d + "/one"), *flags, "--batch-per-rank", "16", "--dump-params", d + "/one.bin")
    run(2, *gpu_common(d + "/two"), *flags, "--ranks", "2", "--batch-per-rank", "8",
        "--dump-params", d + "/two.bin")
    diff = float(np.abs(params(d + "/one.bin") - params(d + "/two.bin")).max())
    print(f"1x16 vs 2x8 on GPUs: max abs param diff {diff:.3g}")
    assert diff < 1e-4, diff


def main():
    global ARGS
    ap = argparse.ArgumentParser()
    ap.add_argument("--train", required=True)
    ap.add_argument("--mpirun", required=True)
    ap.add_argument("--work", required=True)
    ap.add_argument("--cuda", default="OFF", help="ON when built with CUDA/NCCL")
    ap.add_argument("scenario")
    ARGS = ap.parse_args()
    ARGS.cuda = ARGS.cuda.upper() in ("ON", "1", "TRUE", "YES")
    os.makedirs(ARGS.work, exist_ok=True)
    globals()[ARGS.scenario]()
    print("ok", ARGS.scenario)


if __name__ == "__main__":
    main()
