#!/usr/bin/python3
"""Checks `gridrun plan` of one full-size example grid against what that example must give.

    check_plan.py GRIDRUN EXAMPLES_DIR STUDY [--models DIR --work DIR] [--print]

Runs `gridrun plan EXAMPLES_DIR/STUDY.yaml --format json --gpus 4 --cores 64` (every job must fit a
4-GPU, 64-core node) and compares with EXPECTED[STUDY] below: the jobs in launch order (each job's
values of the parameters that vary), the parameters that vary, the jobs excluded, and the warnings
(each example must give none; a warning would be in the JSON and on stderr); and the job ids, in
order, with the golden ids of tests/jobs/golden/ids/STUDY.ids. Exit 0 when all agree, 1 naming
every difference.

Why pin the ids: a job id is a hash of all its resolved parameters, and the run directory, the
results, the report and `--only id=...` all find jobs by it. An id that changes silently (a
default changed, a parameter added to the hash, an example edited) makes every earlier run of that
example look like other jobs. The ids are read from the golden files of `jobs.golden_ids` (one
list to regenerate on an intended change; tests/jobs/golden_ids.sh says how) rather than copied
here. After an intended change to an example, --print prints its new EXPECTED entry to paste.

Grids with model files (model: torchscript; --models DIR: the files `examples.export-models`
exported, --work DIR: where the grid is copied beside a `models` link to them) cannot pin ids: each
id hashes the model file's absolute path (the copy's folder in this build tree, so another checkout
or build folder gives other ids; docs/own-model.md) and its SHA-256 (the bytes the installed torch
writes), so they have no golden file. For them the check pins the job count, each job's other
parameters and the model file it names (relative to the grid's folder), and checks that
model_sha256 is the SHA-256 of that file and that the ids are 12 lowercase hex digits and distinct.
"""
import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

GOLDEN_IDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "jobs", "golden", "ids")

# Per study: "varying" (the parameters whose value differs between jobs, in the planner's order),
# "jobs" (per job in launch order, its values of the varying parameters; model_file relative to the
# grid's folder), "excluded" (jobs the grid's exclude: removed) and "warnings" (exact texts, the
# grid's path written GRID). The ids: tests/jobs/golden/ids/STUDY.ids.
EXPECTED = {
    "gpu-generations": {
        "varying": ["model", "task", "batch_per_rank", "global_batch", "ranks"],
        "excluded": 0,
        "warnings": [],
        "jobs": [
            ("resnet50", "train", 64, 64, 1),
            ("resnet50", "train", 64, 128, 2),
            ("resnet50", "train", 64, 256, 4),
            ("resnet50", "train", 256, 256, 1),
            ("resnet50", "train", 256, 512, 2),
            ("resnet50", "train", 256, 1024, 4),
            ("vgg16", "train", 64, 64, 1),
            ("vgg16", "train", 64, 128, 2),
            ("vgg16", "train", 64, 256, 4),
            ("vgg16", "train", 256, 256, 1),
            ("vgg16", "train", 256, 512, 2),
            ("vgg16", "train", 256, 1024, 4),
            ("resnet50", "inference", 1, 1, 1),
            ("resnet50", "inference", 1024, 1024, 1),
            ("vgg16", "inference", 1, 1, 1),
            ("vgg16", "inference", 1024, 1024, 1),
        ],
    },
    "profile-cpu-vs-gpu": {
        "varying": ["batch_per_rank", "global_batch", "device"],
        "excluded": 0,
        "warnings": [],
        "jobs": [
            (64, 64, "cpu"),
            (128, 128, "cpu"),
            (64, 64, "gpu"),
            (128, 128, "gpu"),
        ],
    },
    # exclude: {device: cpu, ranks: 2} drops 2 jobs (counted only by the summary line on stderr).
    "roofline": {
        "varying": ["model", "global_batch", "device", "ranks"],
        "excluded": 2,
        "warnings": [],
        "jobs": [
            ("alexnet", 128, "cpu", 1),
            ("alexnet", 128, "gpu", 1),
            ("alexnet", 256, "gpu", 2),
            ("resnet18", 128, "cpu", 1),
            ("resnet18", 128, "gpu", 1),
            ("resnet18", 256, "gpu", 2),
        ],
    },
    "large-vs-small": {
        "varying": ["model", "batch_per_rank", "ranks", "seed"],
        "excluded": 0,
        "warnings": [],
        "jobs": [
            ("vgg16", 64, 4, 0),
            ("vgg16", 64, 4, 1),
            ("vgg16", 128, 2, 0),
            ("vgg16", 128, 2, 1),
            ("mlp", 64, 4, 0),
            ("mlp", 64, 4, 1),
            ("mlp", 128, 2, 0),
            ("mlp", 128, 2, 1),
        ],
    },
    "cpu-inference": {
        "varying": ["model", "batch_per_rank", "global_batch", "quantize"],
        "excluded": 0,
        "warnings": [],
        "jobs": [
            ("resnet18", 1, 1, "none"),
            ("resnet18", 1, 1, "int8"),
            ("resnet18", 8, 8, "none"),
            ("resnet18", 8, 8, "int8"),
            ("resnet18", 64, 64, "none"),
            ("resnet18", 64, 64, "int8"),
            ("resnet18", 256, 256, "none"),
            ("resnet18", 256, 256, "int8"),
            ("vgg16", 1, 1, "none"),
            ("vgg16", 1, 1, "int8"),
            ("vgg16", 8, 8, "none"),
            ("vgg16", 8, 8, "int8"),
            ("vgg16", 64, 64, "none"),
            ("vgg16", 64, 64, "int8"),
            ("vgg16", 256, 256, "none"),
            ("vgg16", 256, 256, "int8"),
            ("alexnet", 1, 1, "none"),
            ("alexnet", 1, 1, "int8"),
            ("alexnet", 8, 8, "none"),
            ("alexnet", 8, 8, "int8"),
            ("alexnet", 64, 64, "none"),
            ("alexnet", 64, 64, "int8"),
            ("alexnet", 256, 256, "none"),
            ("alexnet", 256, 256, "int8"),
        ],
    },
    # docs/examples.md quotes the mlp and lenet ids (15118dc19639, 45a434d94f67) with their results.
    "fashion-mnist": {
        "varying": ["model", "epochs", "lr", "lr_schedule", "weight_decay", "device", "augment", "mlp_hidden"],
        "excluded": 0,
        "warnings": [],
        "jobs": [
            ("mlp", 20, 0.02, "constant", 0.0, "cpu", "none", "256,128,100"),
            ("lenet", 20, 0.02, "constant", 0.0, "cpu", "none", "256,128"),
            ("resnet18", 30, 0.05, "cosine", 0.0005, "gpu", "crop_flip", "256,128"),
        ],
    },
    # Grids with model files: no golden ids, see the docstring.
    "image-and-text": {
        "varying": ["dataset", "data_dir", "batch_per_rank", "global_batch", "device", "model_file"],
        "excluded": 0,
        "warnings": [],
        "jobs": [
            ("cifar10", "data/cifar-10-batches-bin", 16, 16, "cpu", "models/convnext_t.pt"),
            ("cifar10", "data/cifar-10-batches-bin", 64, 64, "cpu", "models/convnext_t.pt"),
            ("cifar10", "data/cifar-10-batches-bin", 256, 256, "cpu", "models/convnext_t.pt"),
            ("cifar10", "data/cifar-10-batches-bin", 16, 16, "gpu", "models/convnext_t.pt"),
            ("cifar10", "data/cifar-10-batches-bin", 64, 64, "gpu", "models/convnext_t.pt"),
            ("cifar10", "data/cifar-10-batches-bin", 256, 256, "gpu", "models/convnext_t.pt"),
            ("cifar10", "data/cifar-10-batches-bin", 16, 16, "cpu", "models/vit_b_16.pt"),
            ("cifar10", "data/cifar-10-batches-bin", 64, 64, "cpu", "models/vit_b_16.pt"),
            ("cifar10", "data/cifar-10-batches-bin", 256, 256, "cpu", "models/vit_b_16.pt"),
            ("cifar10", "data/cifar-10-batches-bin", 16, 16, "gpu", "models/vit_b_16.pt"),
            ("cifar10", "data/cifar-10-batches-bin", 64, 64, "gpu", "models/vit_b_16.pt"),
            ("cifar10", "data/cifar-10-batches-bin", 256, 256, "gpu", "models/vit_b_16.pt"),
            ("text", "data/text", 16, 16, "cpu", "models/bert_base.pt"),
            ("text", "data/text", 64, 64, "cpu", "models/bert_base.pt"),
            ("text", "data/text", 16, 16, "gpu", "models/bert_base.pt"),
            ("text", "data/text", 64, 64, "gpu", "models/bert_base.pt"),
        ],
    },
    "own-model": {
        "varying": ["batch_per_rank", "global_batch", "device", "model_file", "input"],
        "excluded": 0,
        "warnings": [],
        "jobs": [
            (16, 16, "cpu", "models/convnext_t.pt", "auto"),
            (16, 16, "cpu", "models/vit_b_16.pt", "auto"),
            (16, 16, "cpu", "models/bert_base.pt", "tokens"),
            (64, 64, "cpu", "models/convnext_t.pt", "auto"),
            (64, 64, "cpu", "models/vit_b_16.pt", "auto"),
            (64, 64, "cpu", "models/bert_base.pt", "tokens"),
            (256, 256, "cpu", "models/convnext_t.pt", "auto"),
            (256, 256, "cpu", "models/vit_b_16.pt", "auto"),
            (256, 256, "cpu", "models/bert_base.pt", "tokens"),
            (16, 16, "gpu", "models/convnext_t.pt", "auto"),
            (16, 16, "gpu", "models/vit_b_16.pt", "auto"),
            (16, 16, "gpu", "models/bert_base.pt", "tokens"),
            (64, 64, "gpu", "models/convnext_t.pt", "auto"),
            (64, 64, "gpu", "models/vit_b_16.pt", "auto"),
            (64, 64, "gpu", "models/bert_base.pt", "tokens"),
            (256, 256, "gpu", "models/convnext_t.pt", "auto"),
            (256, 256, "gpu", "models/vit_b_16.pt", "auto"),
            (256, 256, "gpu", "models/bert_base.pt", "tokens"),
        ],
    },
    "own-model-cpu": {
        "varying": ["batch_per_rank", "global_batch", "model_file", "input"],
        "excluded": 0,
        "warnings": [],
        "jobs": [
            (4, 4, "models/convnext_t.pt", "auto"),
            (4, 4, "models/vit_b_16.pt", "auto"),
            (4, 4, "models/bert_base.pt", "tokens"),
            (16, 16, "models/convnext_t.pt", "auto"),
            (16, 16, "models/vit_b_16.pt", "auto"),
            (16, 16, "models/bert_base.pt", "tokens"),
        ],
    },
}


def fail(msg):
    print(f"FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def sha256(path, cache={}):
    if path not in cache:
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 20), b""):
                h.update(block)
        cache[path] = h.hexdigest()
    return cache[path]


def plan(args):
    """The grid file to plan (a copy beside the models link for --models) and its plan."""
    grid = os.path.join(args.examples, args.study + ".yaml")
    if args.models:
        if not args.work:
            fail("--models needs --work")
        shutil.rmtree(args.work, ignore_errors=True)
        os.makedirs(args.work)
        shutil.copy(grid, args.work)
        os.symlink(os.path.abspath(args.models), os.path.join(args.work, "models"))
        grid = os.path.join(args.work, args.study + ".yaml")
    # plan checks a built-in data set's files (issue 58); the examples' data_dir (data/...) is
    # relative to where gridrun runs: plan from a folder with empty stand-ins of those files.
    data = tempfile.mkdtemp(prefix="gridrun-check-plan-")
    stand_ins = {"data/cifar-10-batches-bin": ["data_batch_%d.bin" % k for k in range(1, 6)] + ["test_batch.bin"],
                 "data/text": ["train.tsv", "test.tsv"]}
    for folder, names in stand_ins.items():
        os.makedirs(os.path.join(data, folder))
        for name in names:
            open(os.path.join(data, folder, name), "w").close()
    cmd = [os.path.abspath(args.gridrun), "plan", os.path.abspath(grid), "--format", "json", "--gpus", "4", "--cores", "64"]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=300, cwd=data)
    finally:
        shutil.rmtree(data, ignore_errors=True)
    if p.returncode != 0:
        fail(f"{' '.join(cmd)}: exit {p.returncode}\n{p.stdout[-2000:]}{p.stderr[-2000:]}")
    try:
        return grid, json.loads(p.stdout), p.stderr
    except ValueError as e:
        fail(f"{' '.join(cmd)}: stdout is not JSON ({e}):\n{p.stdout[:2000]}")


def rows(grid, out):
    """Each job's varying values, model files relative to the grid's folder."""
    folder = os.path.dirname(os.path.abspath(grid))
    got = []
    for j in out["jobs"]:
        vals = []
        for k in out["varying"]:
            v = j["params"][k]
            if k == "model_file" and v:
                v = os.path.relpath(v, folder)
            vals.append(v)
        got.append(tuple(vals))
    return got


def golden_ids(study):
    """The study's golden ids, or None for a grid with model files (no golden file)."""
    path = os.path.join(GOLDEN_IDS, study + ".ids")
    if not os.path.exists(path):
        return None
    with open(path) as f:
        return f.read().split()


def check(args, grid, out, stderr):
    exp = EXPECTED[args.study]
    errors = []
    got = rows(grid, out)
    if out["varying"] != exp["varying"]:
        errors.append(f"varying parameters {out['varying']}, expected {exp['varying']}")
    if len(got) != len(exp["jobs"]):
        errors.append(f"{len(got)} jobs, expected {len(exp['jobs'])}")
    for i, (g, e) in enumerate(zip(got, exp["jobs"])):
        if list(g) != list(e):
            errors.append(f"job {i}: got {g}, expected {e}")
    # The summary on stderr: "N jobs (K excluded), W warnings..." (the JSON has no excluded count).
    m = re.search(r"\b(\d+) jobs?(?: \((\d+) excluded\))?, (\d+) warnings?", stderr)
    if not m:
        errors.append(f"no 'N jobs, W warnings' summary on stderr: {stderr!r}")
    else:
        n, excluded, w = int(m.group(1)), int(m.group(2) or 0), int(m.group(3))
        if (n, excluded, w) != (len(exp["jobs"]), exp["excluded"], len(exp["warnings"])):
            errors.append(f"summary says {n} jobs, {excluded} excluded, {w} warnings; expected "
                          f"{len(exp['jobs'])}, {exp['excluded']}, {len(exp['warnings'])}")
    warnings = [w.replace(grid, "GRID") for w in out["warnings"]]
    if warnings != exp["warnings"]:
        errors.append(f"warnings {warnings}, expected {exp['warnings']}")
    # The model check's note that a model could not be built where the data set's files are absent
    # (image-and-text: CIFAR-10 and the text set live on the machines that train) is not one of
    # the grid's warnings: it says what this machine could not check (docs/own-model.md).
    printed = [line.split("warning: ", 1)[1].replace(grid, "GRID")
               for line in stderr.splitlines()
               if "warning: " in line and "model not checked before launch" not in line]
    if printed != exp["warnings"]:
        errors.append(f"warnings on stderr {printed}, expected {exp['warnings']}")
    ids = [j["id"] for j in out["jobs"]]
    want = golden_ids(args.study)
    has_model_file = any(j["params"]["model_file"] for j in out["jobs"])
    if want is None and not has_model_file:
        errors.append(f"no golden ids in {GOLDEN_IDS}/{args.study}.ids (only grids with model files "
                      f"may lack them)")
    elif want is not None and ids != want:
        errors.append(f"ids {ids}, expected (golden) {want}")
    # What every id must be, pinned or not (the only id check of grids with model files).
    bad = [i for i in ids if not re.fullmatch(r"[0-9a-f]{12}", i)]
    if bad:
        errors.append(f"ids that are not 12 lowercase hex digits: {bad}")
    if len(set(ids)) != len(ids):
        errors.append(f"ids not distinct: {ids}")
    for j in out["jobs"]:
        f = j["params"]["model_file"]
        if f and j["params"]["model_sha256"] != sha256(f):
            errors.append(f"job {j['id']}: model_sha256 {j['params']['model_sha256']} is not the "
                          f"SHA-256 of {f} ({sha256(f)})")
    return errors


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("gridrun")
    ap.add_argument("examples")
    ap.add_argument("study")
    ap.add_argument("--models", help="folder of the exported model files (grids with model_file)")
    ap.add_argument("--work", help="folder to plan the grid's copy in (with --models)")
    ap.add_argument("--print", action="store_true",
                    help="print the EXPECTED entry of the current plan (to paste after an intended "
                         "change) instead of checking")
    args = ap.parse_args()
    grid, out, stderr = plan(args)
    if args.print:
        m = re.search(r"\((\d+) excluded\)", stderr)
        warnings = [w.replace(grid, "GRID") for w in out["warnings"]]
        print(f"    {json.dumps(args.study)}: {{\n        \"varying\": {json.dumps(out['varying'])},\n"
              f"        \"excluded\": {int(m.group(1)) if m else 0},\n"
              f"        \"warnings\": {json.dumps(warnings)},\n        \"jobs\": [")
        for r in rows(grid, out):
            one = "," if len(r) == 1 else ""  # a 1-tuple
            print("            (" + ", ".join(json.dumps(v) for v in r) + one + "),")
        print("        ],\n    },")
        return
    if args.study not in EXPECTED:
        fail(f"no expectation for {args.study!r} in {__file__} (add one: see --print)")
    errors = check(args, grid, out, stderr)
    if errors:
        fail(f"gridrun plan {grid}:\n  " + "\n  ".join(errors))
    print(f"{args.study}: {len(out['jobs'])} jobs as expected, ids "
          f"{'as golden' if golden_ids(args.study) else 'well-formed and distinct'}, "
          f"{len(out['warnings'])} warnings")


if __name__ == "__main__":
    main()
