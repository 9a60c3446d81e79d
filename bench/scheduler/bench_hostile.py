#!/usr/bin/env python3
"""Hostile run files, third round (issue 57; BENCHMARKS.md, "Hostile input, third round").

A real run is the original: `gridrun calibrate` then `gridrun run` of a 2-job grid (real
gridrun-train), so that every kind of file gridrun reads back is there. Then every kind in turn is
replaced, on a fresh copy of the run, by each of: a FIFO nobody writes, a link to /dev/zero, a link
to a file outside the run (in a victim tree), a 1 GB sparse file, a folder, and --flips copies
with 1-8 flipped bits each (seeded; an empty original, the lock, has none). On
each copy: status, ls, report, export (csv), export (tensorboard), simulate and run, each under
`timeout` (a hang) and an address-space limit (RLIMIT_AS, soft: the trainer lifts it for itself, a
LibTorch process maps more than it uses). Counted per case:
  hangs       the timeout ended a command;
  crashes     a signal, an exit above 2, std::bad_alloc or std::terminate in the output, or an
              exit other than 0 without a word of output;
  peak RSS    the largest resident size of a command and what it waited for (wait4 of the command:
              for `run` that includes mpirun and gridrun-train);
  outside     files of the victim tree (the links' targets among them) whose bytes changed;
  jobs lost   after `run`: a job of the original that neither status shows finished nor has its
              results file as it was.

    bench_hostile.py GRIDRUN GRIDRUN_TRAIN [--seed S] [--flips N] [--timeout S] [--as-mb MB] [--keep DIR]
"""
import argparse
import hashlib
import json
import os
import random
import resource
import shutil
import subprocess
import sys
import tempfile
import time

ap = argparse.ArgumentParser()
ap.add_argument("gridrun")
ap.add_argument("train")
ap.add_argument("--seed", type=int, default=57)
ap.add_argument("--timeout", type=int, default=20, help="seconds per command before it counts as a hang")
ap.add_argument("--as-mb", type=int, default=2000, help="address-space limit of every command, MB")
ap.add_argument("--flips", type=int, default=20, help="bit-flipped copies per kind of file")
ap.add_argument("--keep", help="keep the work folder here")
args = ap.parse_args()
GRIDRUN, TRAIN = os.path.abspath(args.gridrun), os.path.abspath(args.train)
WORK = os.path.abspath(args.keep) if args.keep else tempfile.mkdtemp(prefix="gridrun-bench-hostile-")
os.makedirs(WORK, exist_ok=True)
RNG = random.Random(args.seed)
GRID = """name: hostile
defaults: {model: mlp, dataset: synthetic, device: cpu, threads_per_rank: 1, epochs: 1,
           train_samples: 64, test_samples: 16, batch_per_rank: 16, optimizer: sgd}
grid:
  lr: [0.05, 0.1]
"""
HOW = ("fifo", "/dev/zero link", "link outside", "1 GB sparse", "folder", "bit flips")
BAD_WORDS = ("bad_alloc", "terminate called", "Segmentation fault", "Aborted (core")


def limit():
    soft = args.as_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (soft, resource.RLIM_INFINITY))


def command(argv, cwd):
    """(exit code, output, peak RSS in MB) of argv under timeout and the address-space limit."""
    p = subprocess.Popen(["timeout", "-k", "5", str(args.timeout)] + argv, cwd=cwd, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, preexec_fn=limit)
    out = p.stdout.read().decode("utf-8", "replace")
    _, status, usage = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    return p.returncode, out, usage.ru_maxrss / 1024.0


def digest(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def tree(root):
    """Every entry under root (links not followed) with its content's hash or link target."""
    out = {}
    for folder, dirs, files in os.walk(root):
        for name in files + dirs:
            p = os.path.join(folder, name)
            if os.path.islink(p):
                out[os.path.relpath(p, root)] = "-> " + os.readlink(p)
            elif os.path.isfile(p):
                out[os.path.relpath(p, root)] = digest(p)
    return out


def gridrun(*a, cwd=WORK):
    p = subprocess.run([GRIDRUN] + list(a), cwd=cwd, capture_output=True, text=True, timeout=600)
    if p.returncode != 0:
        sys.exit("bench_hostile: gridrun %s: exit %d: %s" % (" ".join(a), p.returncode, p.stderr[-800:]))
    return p


def make_original():
    grid = os.path.join(WORK, "hostile.yaml")
    with open(grid, "w") as f:
        f.write(GRID)
    out = os.path.join(WORK, "orig")
    gridrun("calibrate", grid, "--out", out, "--train-bin", TRAIN, "--accept-load")
    gridrun("run", grid, "--out", out, "--train-bin", TRAIN, "--no-report")
    gridrun("status", os.path.join(out, "hostile"))  # writes the results folder's index
    gridrun("collect", os.path.join(out, "hostile"))  # results.h5
    run_dir = os.path.join(out, "hostile")
    with open(os.path.join(run_dir, "state.json")) as f:
        ids = sorted(json.load(f)["jobs"])
    # A heartbeat as a live job leaves it (the finished jobs' are gone).
    hb = os.path.join(run_dir, "logs", ids[0] + ".out.heartbeat")
    if not os.path.exists(hb):
        with open(hb, "w") as f:
            f.write('{"step": 3, "total_steps": 4, "epoch": 0, "epochs": 1, "time": %d}\n' % time.time())
    return grid, out, run_dir, ids


def kinds_of(ids):
    j = ids[0]
    return {"state.json": "state.json", "results index": "results/.gridrun-index", "results file": "results/%s.h5" % j,
            "collected results.h5": "results.h5", "grid copy": "grid.yaml", "job file": "jobs/%s.json" % j, "heartbeat": "logs/%s.out.heartbeat" % j,
            "job log": "logs/%s.err" % j, "job output": "logs/%s.out" % j, "launch token": "launch-token", "lock": "lock",
            "calibration": "calibration.json", "prediction": "prediction.json"}


def damage(path, how, victim_file):
    existed = os.path.isfile(path) and not os.path.islink(path)
    data = open(path, "rb").read() if existed else b""
    if os.path.lexists(path):
        shutil.rmtree(path) if os.path.isdir(path) and not os.path.islink(path) else os.remove(path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    if how == "fifo":
        os.mkfifo(path, 0o600)
    elif how == "/dev/zero link":
        os.symlink("/dev/zero", path)
    elif how == "link outside":
        os.symlink(victim_file, path)
    elif how == "1 GB sparse":
        with open(path, "wb") as f:
            f.truncate(1 << 30)
    elif how == "folder":
        os.makedirs(os.path.join(path, "inside"))
    else:
        if not data:
            return None
        b = bytearray(data)
        flips = RNG.randint(1, 8)
        for _ in range(flips):
            k = RNG.randrange(len(b) * 8)
            b[k // 8] ^= 1 << (k % 8)
        with open(path, "wb") as f:
            f.write(bytes(b))
        return "%d bits" % flips
    return how


def main():
    grid, orig_out, orig_dir, ids = make_original()
    victim = os.path.join(WORK, "victim")
    os.makedirs(os.path.join(victim, "deep"), exist_ok=True)
    victim_file = os.path.join(victim, "other-experiment.json")
    with open(victim_file, "w") as f:
        f.write('{"another": "experiment", "lr": 0.1}\n')
    for i in range(3):
        with open(os.path.join(victim, "deep", "events.out.tfevents.%d.elsewhere" % i), "wb") as f:
            f.write(os.urandom(256))
    victim_before = tree(victim)
    finished_before = {j: digest(os.path.join(orig_dir, "results", j + ".h5")) for j in ids}
    trainer = os.path.join(WORK, "train.sh")
    with open(trainer, "w") as f:  # the trainer lifts the soft address-space limit for itself only
        f.write("#!/bin/sh\nulimit -v unlimited\nexec %s \"$@\"\n" % TRAIN)
    os.chmod(trainer, 0o755)
    rows, problems, peak = {}, [], {}
    started = time.monotonic()
    for kind, rel in kinds_of(ids).items():
        for how in HOW[:-1] + (HOW[-1],) * args.flips:
            case = os.path.join(WORK, "case")
            shutil.rmtree(case, ignore_errors=True)
            out = os.path.join(case, "runs")
            run_dir = os.path.join(out, "hostile")
            shutil.copytree(orig_dir, run_dir, symlinks=True)
            what = damage(os.path.join(run_dir, rel), how, victim_file)
            if what is None:
                continue
            r = rows.setdefault(kind, {"cases": 0, "hangs": 0, "crashes": 0, "outside": 0, "lost": 0, "rss": 0.0,
                                       "refused": 0})
            r["cases"] += 1
            cmds = {"status": ["status", run_dir], "ls": ["ls", out], "report": ["report", run_dir],
                    "export csv": ["export", run_dir, "--what", "jobs", "--format", "csv"],
                    "export tensorboard": ["export", run_dir, "--format", "tensorboard", "--out",
                                           os.path.join(case, "tb")],
                    "simulate": ["simulate", grid, "--out", out],
                    "run": ["run", grid, "--out", out, "--train-bin", trainer, "--no-report", "--retries", "1"]}
            run_code = None
            for name, argv in cmds.items():
                code, text, rss = command([GRIDRUN] + argv, case)
                label = "%s as %s (%s): gridrun %s" % (kind, how, what, name)
                peak[name] = max(peak.get(name, 0.0), rss)
                r["rss"] = max(r["rss"], rss) if name != "run" else r["rss"]
                if code == 124 or code == -9:
                    r["hangs"] += 1
                    problems.append("hang: " + label)
                elif code < 0 or code > 2 or any(w in text for w in BAD_WORDS) or (code != 0 and not text.strip()):
                    r["crashes"] += 1
                    problems.append("crash: %s: exit %d: %s" % (label, code, text[-300:]))
                elif code != 0:
                    r["refused"] += 1
                if name == "run":
                    run_code = code
            # Jobs lost: after the run, every original job is finished (status) or its file is as it was.
            code, text, _ = command([GRIDRUN, "status", run_dir, "--format", "json"], case)
            try:
                st = json.loads(text[text.index("{"):text.rindex("}") + 1])
                done = {j["id"] for j in st["jobs"] if j["state"] in ("completed", "target_reached")}
            except (ValueError, KeyError):
                done = set()
            for j in ids:
                f = os.path.join(run_dir, "results", j + ".h5")
                kept = os.path.isfile(f) and not os.path.islink(f) and digest(f) == finished_before[j]
                if j not in done and not kept:
                    r["lost"] += 1
                    problems.append("lost: %s as %s: job %s (run exit %s)" % (kind, how, j, run_code))
            if tree(victim) != victim_before:
                r["outside"] += 1
                problems.append("outside changed: %s as %s" % (kind, how))
                victim_before = tree(victim)  # later cases are compared with what is there now
            print("case %-14s %-15s done (%.0f s)" % (kind, how, time.monotonic() - started), flush=True)
    print("\n| file | cases | hangs | crashes | refused commands | peak RSS MB (not run) | outside changed | jobs lost |")
    print("|---|---|---|---|---|---|---|---|")
    tot = {"cases": 0, "hangs": 0, "crashes": 0, "outside": 0, "lost": 0, "refused": 0, "rss": 0.0}
    for kind, r in rows.items():
        print("| %s | %d | %d | %d | %d | %.0f | %d | %d |" % (kind, r["cases"], r["hangs"], r["crashes"], r["refused"],
                                                           r["rss"], r["outside"], r["lost"]))
        for k in tot:
            tot[k] = max(tot[k], r[k]) if k == "rss" else tot[k] + r[k]
    print("| all | %d | %d | %d | %d | %.0f | %d | %d |" % (tot["cases"], tot["hangs"], tot["crashes"], tot["refused"],
                                                         tot["rss"], tot["outside"], tot["lost"]))
    print("\npeak RSS by command (MB, over every case; run includes mpirun and gridrun-train): " +
          ", ".join("%s %.0f" % kv for kv in peak.items()))
    for p in problems:
        print(p)
    print("bench_hostile: %d cases, %d commands each, seed %d, %d flipped copies per kind, timeout %d s, "
          "RLIMIT_AS %d MB, %.0f s" % (tot["cases"], 7, args.seed, args.flips, args.timeout, args.as_mb,
                                       time.monotonic() - started))
    if not args.keep:
        shutil.rmtree(WORK, ignore_errors=True)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
