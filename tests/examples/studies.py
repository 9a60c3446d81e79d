#!/usr/bin/env python3
"""Runs one study's CPU-sized example grid with the real `gridrun run` and checks that the report
shows what the study measured (see docs/examples.md).

    studies.py GRIDRUN EXAMPLES_DIR STUDY [MODELS_DIR]

MODELS_DIR: the TorchScript files examples/models/export_models.py made (for the grids with
model: torchscript, whose model_file paths are relative to the grid); the grid is then run from a
copy beside a `models` link to that folder, so the test writes nothing into the source tree.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import h5py

gridrun, examples, study = sys.argv[1:4]
models = sys.argv[4] if len(sys.argv) > 4 else ""


# Overrides (`gridrun run --set`, new job ids) that shorten a study's jobs where what is checked
# below does not depend on their length; the grid files stay what the studies show users.
#   gpu-generations: 5 timed inference batches, not 50 (vgg16 at batch 64: 26 s of the test's 75);
#     one training step, timed (no warm-up step), and no test-set evaluation: the checks read
#     throughput, weak scaling and inference latencies, not accuracy.
#   image-and-text: one training step, timed and profiled (the warm-up step and the profiled step
#     were two steps of 6-16 s each for ViT-B/16 and BERT on one core), no test-set evaluation.
SETS = {
    "gpu-generations": ["infer_batches=5", "max_steps=1", "timing_warmup_steps=0", "eval_every=0"],
    "image-and-text": ["max_steps=1", "timing_warmup_steps=0", "eval_every=0"],
}
SET_ARGS = [a for kv in SETS.get(study, []) for a in ("--set", kv)]


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def run(*args, check=True):
    p = subprocess.run([gridrun, *args], capture_output=True, text=True)
    if check and p.returncode != 0:
        print(p.stdout[-4000:], p.stderr[-4000:])
        fail(f"gridrun {' '.join(args)} exited {p.returncode}")
    return p


def table(report, title):
    for t in report["tables"]:
        if t["title"].startswith(title):
            return t
    fail(f"report has no '{title}' table; it has {[t['title'] for t in report['tables']]}")


with tempfile.TemporaryDirectory() as tmp:
    grid = os.path.join(examples, f"{study}-cpu.yaml")
    if models:
        shutil.copy(grid, tmp)
        os.symlink(models, os.path.join(tmp, "models"))
        grid = os.path.join(tmp, f"{study}-cpu.yaml")
    run("run", grid, "--out", tmp, *SET_ARGS)
    rundir = os.path.join(tmp, f"{study}-cpu")
    resdir = os.path.join(rundir, "results")
    files = sorted(f for f in os.listdir(resdir) if f.endswith(".h5"))
    njobs = len([f for f in os.listdir(os.path.join(rundir, "jobs")) if f.endswith(".json")])
    if len(files) != njobs:
        fail(f"{len(files)} results files for {njobs} jobs")
    if not files:  # 0 files for 0 jobs would pass every loop below
        fail(f"no results files in {resdir}")
    summaries = {}
    for f in files:
        with h5py.File(os.path.join(resdir, f), "r") as h:
            status = h.attrs["status"]
            status = status.decode() if isinstance(status, bytes) else status
            if status != "completed":
                fail(f"{f}: status {status}")
            params = json.loads(h.attrs["params"])
            summ = {k: float(h["summary"][k][0]) for k in h["summary"] if k != "rows"}
            summaries[f[:-3]] = (params, summ, "profile" in h and len(h["profile"]) > 0,
                                 h["profile/name"][:].tolist() if "profile" in h else [])
    report = json.loads(run("report", rundir, "--format", "json").stdout)
    jobs = table(report, "Jobs")
    if len(jobs["rows"]) != njobs:
        fail(f"Jobs table has {len(jobs['rows'])} rows, expected {njobs}")
    for r in jobs["rows"]:
        if not (r["samples/s"] and r["samples/s"] > 0):
            fail(f"job {r['id']}: no throughput in the report: {r}")

    train = {i: s for i, s in summaries.items() if s[0]["task"] == "train"}
    infer = {i: s for i, s in summaries.items() if s[0]["task"] == "inference"}
    if study == "gpu-generations":
        # Images/s per model and batch, and scaling 1 -> 2 ranks for each (model, batch).
        scaling = table(report, "Scaling")
        # Weak scaling (fixed batch per rank) is the study's question; the report also lists strong
        # scaling groups where global batches happen to coincide.
        groups = {(r["model"], r["batch"]) for r in scaling["rows"] if r["mode"] == "weak"}
        if len(groups) != 4:
            fail(f"weak scaling groups {groups}, expected 2 models x 2 batch sizes")
        for r in scaling["rows"]:
            if r["mode"] == "weak" and r["ranks"] == 1 and abs(r["speed-up"] - 1.0) > 1e-9:
                fail(f"1-rank row must be the reference (speed-up 1): {r}")
        if len(infer) != 2:
            fail(f"expected 2 inference jobs (batch 1 and 64), got {len(infer)}")
        for i, (p, s, _, _) in infer.items():
            for k in ("latency_p50_s", "latency_p99_s", "samples_per_s"):
                if not s.get(k, 0) > 0:
                    fail(f"inference job {i}: summary {k} missing or not positive: {sorted(s)}")
            if s["latency_p99_s"] < s["latency_p50_s"]:
                fail(f"inference job {i}: p99 < p50")
    if study == "image-and-text":
        # The study's own architectures, as TorchScript files: sizes and FLOPs counted from each
        # model's forward (ConvNeXt-T 28M parameters, ViT-B/16 and the BERT-base-sized encoder
        # 86M), 2 batch sizes each.
        expect = {"convnext_t.pt": (27.0e6, 29.0e6), "vit_b_16.pt": (85.0e6, 87.0e6),
                  "bert_base.pt": (85.0e6, 87.0e6)}
        seen = {}
        for i, (p, s, _, _) in train.items():
            name = os.path.basename(p["model_file"])
            lo, hi = expect.get(name, (0, 0))
            if not lo <= s["model_params"] <= hi:
                fail(f"job {i}: {name} has {s['model_params']:.0f} parameters, expected {lo:.0f}-{hi:.0f}")
            if not s["flops_per_sample"] > 1e6 or len(p["model_sha256"]) != 64:
                fail(f"job {i}: {name}: flops_per_sample {s['flops_per_sample']}, sha {p['model_sha256']!r}")
            seen[name] = seen.get(name, 0) + 1
        if seen != {n: 2 for n in expect}:
            fail(f"jobs per model file {seen}, expected 2 of each of {sorted(expect)}")
        # The uncalibrated simulator knows these models' cost from gridrun-train --count-flops
        # (no table has them): a job's predicted time grows with its model's counted FLOPs.
        sim = json.loads(run("simulate", grid, "--out", os.path.join(tmp, "sim"), "--format", "json",
                             *SET_ARGS).stdout)
        dur = {j["id"]: j["end_s"] - j["start_s"] for j in sim["jobs"]}
        by_flops = sorted(train, key=lambda i: (train[i][0]["batch_per_rank"], train[i][1]["flops_per_sample"]))
        for a, b in zip(by_flops, by_flops[1:]):
            pa, pb = train[a][0], train[b][0]
            fa, fb = train[a][1]["flops_per_sample"], train[b][1]["flops_per_sample"]
            if pa["batch_per_rank"] == pb["batch_per_rank"] and fb > 1.5 * fa and not dur[b] > dur[a]:
                fail(f"simulate: {b} ({fb:.3g} FLOPs/sample) predicted {dur[b]:.2f} s, "
                     f"not longer than {a} ({fa:.3g}): {dur}")
    if study in ("profile-cpu-vs-gpu", "image-and-text"):
        # Operator tables like the published ones: the top operators per profiled job.
        for i, (p, s, has_prof, names) in train.items():
            if not has_prof:
                fail(f"job {i}: profile_steps={p['profile_steps']} but no /profile")
            names = [n.decode() if isinstance(n, bytes) else n for n in names]
            if not any(n.startswith("aten::") for n in names):
                fail(f"job {i}: no aten:: operators in /profile: {names[:10]}")
            trace = os.path.join(resdir, f"{i}.profile.json")
            if not os.path.exists(trace):
                fail(f"job {i}: no Chrome trace {trace}")
            json.load(open(trace))
        prof = run("report", rundir, "--profile", "5").stdout
        if "aten::" not in prof:
            fail("gridrun report --profile shows no aten:: operators:\n" + prof)
    if study == "fashion-mnist":
        # Real data that visibly teaches: both models far above chance (0.1) after 1 epoch on 6,000
        # images (measured: mlp 0.796, lenet 0.691), and the report's accuracy agrees with the file.
        acc = {r["id"]: r["test_acc"] for r in jobs["rows"]}
        for i, (p, s, _, _) in train.items():
            if not s["final_test_acc"] >= 0.6:
                fail(f"job {i} ({p['model']}): test accuracy {s['final_test_acc']} < 0.6")
            if abs(acc[i] - s["final_test_acc"]) > 1e-3:
                fail(f"job {i}: report test_acc {acc[i]} != file {s['final_test_acc']}")
    if study == "roofline":
        # Achieved FLOP/s and arithmetic intensity per job; the HTML roofline draws a point each.
        for i, (p, s, _, _) in train.items():
            for k in ("flops_per_s", "flops_per_sample", "bytes_per_sample"):
                if not s.get(k, 0) > 0:
                    fail(f"job {i}: summary {k} missing or not positive: {sorted(s)}")
        fl = {p["model"]: s["flops_per_sample"] for p, s, _, _ in train.values()}
        if not fl["resnet18"] > fl["alexnet"]:
            fail(f"resnet18 should need more FLOPs per sample than alexnet: {fl}")
        html = os.path.join(tmp, "report.html")
        run("report", rundir, "--html", html)
        if "roofline" not in open(html).read().lower():
            fail("HTML report has no roofline section")
    if study == "cpu-inference":
        # Latency vs batch size, fp32 vs int8: every (model, batch, quantize) has percentiles.
        seen = set()
        for i, (p, s, _, _) in infer.items():
            if not 0 < s["latency_p50_s"] <= s["latency_p90_s"] <= s["latency_p99_s"]:
                fail(f"job {i}: latency percentiles out of order: {s}")
            seen.add((p["model"], p["batch_per_rank"], p["quantize"]))
        if len(seen) != len(summaries) or {q for _, _, q in seen} != {"none", "int8"}:
            fail(f"expected fp32 and int8 inference jobs, got {sorted(seen)}")
    print(f"ok: {study}-cpu: {njobs} jobs completed; report checked")
