"""The driver of bench_verdict.sh (see there): trials of three compare grids, interleaved and
blocked, half of them under background load at a seeded random moment; the verdicts read back from
`gridrun report --format json`."""
import argparse
import json
import math
import os
import random
import re
import statistics
import subprocess
import sys
import time

# Three compare grids of the kind users run: short enough for many trials on 2 cores, long enough
# that training, not launch, is most of a phase (launch is ~0.7 s a job here).
BASE = """defaults: {dataset: synthetic, device: cpu, threads_per_rank: 1, test_samples: 256,
           batch_per_rank: 32, lr: 0.05, epochs: 1, eval_every: 0}
"""
GRIDS = {
    "ranks-mlp": BASE + "compare: {by: ranks}\ngrid:\n  model: [mlp]\n  ranks: [2, 1]\n  train_samples: [12288]\n"
                        "seeds: [0, 1]\n",
    "zip-lenet": BASE + "compare: {by: ranks}\nzip:\n  ranks: [1, 2]\n  threads_per_rank: [2, 1]\n"
                        "grid:\n  model: [lenet]\n  train_samples: [2048]\nseeds: [0]\n",
    "ranks-lenet": BASE + "compare: {by: ranks}\ngrid:\n  model: [lenet]\n  ranks: [2, 1]\n  train_samples: [1024]\n"
                          "seeds: [0, 1]\n",
}


def sh(args, **kw):
    return subprocess.run(args, text=True, capture_output=True, **kw)


def write_grid(work, name, body, repeats, order, tag=""):
    path = os.path.join(work, "%s-%s%s.yaml" % (name, order, tag))
    with open(path, "w") as f:
        f.write("name: %s-%s%s\n%s" % (name, order, tag, body.replace(
            "compare: {by: ranks}", "compare: {by: ranks, repeats: %d, order: %s}" % (repeats, order))))
    return path


class Load:
    """A busy loop at `duty` of one core (busy 10*duty ms of every 10 ms), from `start` s after the
    run starts, for `length` s: background work of another user, at a moment nobody chose."""

    def __init__(self, start, length, duty):
        self.start, self.length, self.duty = start, length, duty
        code = ("import time\nend = time.monotonic() + %f\nwhile time.monotonic() < end:\n"
                "    t = time.monotonic()\n    while time.monotonic() - t < %f: pass\n    time.sleep(%f)\n"
                % (length, 0.01 * duty, 0.01 * (1 - duty)))
        self.proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(%f)\n%s" % (start, code)])

    def stop(self):
        self.proc.kill()
        self.proc.wait()


def trial(args, name, order, out, rng, loaded, expected_s, tag=""):
    g = write_grid(args.work, name, GRIDS[name], args.repeats, order, tag)
    load = None
    if loaded:
        load = Load(rng.uniform(0, 0.6 * expected_s), rng.uniform(0.25, 0.6) * expected_s, rng.choice([0.3, 0.6, 1.0]))
    t0 = time.monotonic()
    r = sh([args.gridrun, "run", g, "--out", out, "--train-bin", args.train, "--no-report", "--rerun", "all"])
    took = time.monotonic() - t0
    if load:
        load.stop()
    if r.returncode != 0:
        return {"error": r.stdout[-500:] + r.stderr[-500:]}, took
    rep = sh([args.gridrun, "report", os.path.join(out, "%s-%s%s" % (name, order, tag)), "--format", "json"])
    tables = json.loads(rep.stdout)["tables"]
    verdict = [row["verdict"] for t in tables if t["title"] == "Verdict" for row in t["rows"]]
    rows = {row["phase"]: row for t in tables if t["title"].startswith("Phases (") for row in t["rows"]}
    head = verdict[0] if verdict else ""
    m = re.search(r"(\d+\.\d\d)x faster", head)
    # The winner by the medians of the repeats the verdict used (the phase table's makespans).
    by_value = {}
    for label, row in rows.items():
        value = label.split(" #")[0]
        if row["makespan_s"] is not None:
            by_value.setdefault(value, []).append(row["makespan_s"])
    med = {v: statistics.median(x) for v, x in by_value.items() if x}
    winner = min(med, key=med.get) if len(med) >= 2 else None
    spread = max(med.values()) / min(med.values()) if len(med) >= 2 and min(med.values()) > 0 else None
    return {"head": head, "ratio": float(m.group(1)) if m else None, "winner": winner, "median_ratio": spread,
            "conclusive": bool(m) and ": inconclusive, " not in head, "disturbed": "disturbed" in " ".join(verdict),
            "loaded": loaded}, took


def calibration_trial(args, name, ref_winner, rng, k):
    """Issue 58: a calibration taken beside background work (one busy loop at a random duty
    cycle, for the whole calibration). calibrate as a user would (refused when still disturbed),
    then with --accept-load and simulate: is the prediction flagged (refused, or printed with the
    load's WARNING), and does a prediction that is not flagged name the quiet reference's loser?"""
    g = write_grid(args.work, name, GRIDS[name], 1, "alternate", "-cal%d" % k)
    out = os.path.join(args.work, "cal-runs")
    duty = rng.choice([0.1, 0.3, 0.6, 1.0])
    load = Load(0, 3600, duty)
    try:
        base = [args.gridrun, "calibrate", g, "--out", out, "--train-bin", args.train]
        plain = sh(base)
        refused = plain.returncode == 1 and "nothing stored" in plain.stdout
        kept = plain if plain.returncode == 0 else sh(base + ["--accept-load"])
        sim = sh([args.gridrun, "simulate", g, "--out", out, "--train-bin", args.train])
    finally:
        load.stop()
    m = re.search(r"predicted \(calibration[^)]*\):.*: (\S+) wins, (\d+\.\d\d)x faster", sim.stdout)
    share = re.search(r"other processes took (?:at most|up to) (\d+) %", sim.stdout)
    warned = "WARNING: other processes took" in sim.stdout
    return {"duty": duty, "refused": refused, "warned": warned, "share": int(share.group(1)) if share else None,
            "winner": m.group(1) if m else None, "ratio": float(m.group(2)) if m else None,
            "ok": kept.returncode == 0 and sim.returncode == 0,
            "confident_wrong": bool(m) and ref_winner is not None and not refused and not warned
            and m.group(1) != ref_winner}


def main():
    ap = argparse.ArgumentParser()
    for k in ("gridrun", "train", "work", "only"):
        ap.add_argument("--" + k, default="")
    ap.add_argument("--trials", type=int, default=10)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--calibration-trials", type=int, default=4)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    names = [args.only] if args.only else list(GRIDS)
    summary, cal_summary, ref_winners = [], [], {}
    for name in names:
        out = os.path.join(args.work, "runs")
        # The quiet reference: 5 interleaved repeats, nothing started beside it.
        ref, ref_s = trial(argparse.Namespace(**{**vars(args), "repeats": 5}), name, "alternate", out, rng, False, 0,
                           "-reference")
        if "error" in ref:
            print("%s: reference run failed: %s" % (name, ref["error"]), file=sys.stderr)
            continue
        print("%s: quiet reference (5 repeats, %.0f s): %s" % (name, ref_s, ref["head"]), flush=True)
        # A reference whose phases' medians are within 10 % of each other is a tie: a prediction
        # of either winner is not judged wrong against it.
        ref_winners[name] = ref["winner"] if (ref["median_ratio"] or 1) > 1.10 else None
        expected = ref_s * args.repeats / 5
        for k in range(args.calibration_trials):
            c = calibration_trial(args, name, ref_winners[name], rng, k)
            cal_summary.append(dict(c, grid=name))
            print("  calibration trial %d: busy loop at %.0f %% duty: %s, load %s %%, predicted %s %sx%s" % (
                k, 100 * c["duty"], "refused" if c["refused"] else "stored", c["share"], c["winner"], c["ratio"],
                ", WARNING" if c["warned"] else ""), flush=True)
        results = {"alternate": [], "blocked": []}
        for k in range(args.trials):
            for order in ("alternate", "blocked"):  # the two orders take turns: the same drift for both
                res, took = trial(args, name, order, out, rng, k % 2 == 1, expected)
                if "error" in res:
                    print("  %s trial %d: failed: %s" % (order, k, res["error"]), file=sys.stderr)
                    continue
                results[order].append(res)
                print("  %-9s trial %2d %-6s %5.1f s  %s" % (order, k, "loaded" if res["loaded"] else "quiet", took,
                                                           res["head"][-110:]), flush=True)
        for order, rs in results.items():
            ratios = [r["ratio"] for r in rs if r["ratio"]]
            logs = [math.log(x) for x in ratios]
            contra = sum(1 for r in rs if r["conclusive"] and r["winner"] != ref["winner"])
            summary.append({
                "grid": name, "order": order, "trials": len(rs), "loaded": sum(r["loaded"] for r in rs),
                "contradicting": contra,
                "inconclusive": sum(1 for r in rs if not r["conclusive"]),
                "inconclusive_loaded": sum(1 for r in rs if not r["conclusive"] and r["loaded"]),
                "ratio_median": statistics.median(ratios) if ratios else float("nan"),
                "spread": statistics.stdev(logs) if len(logs) > 1 else float("nan"),
                "reference": "%s %.2fx" % (ref["winner"], ref["ratio"] or float("nan")),
            })
    print()
    print("| grid | order | trials (loaded) | quiet reference | confident and contradicting | inconclusive (loaded) "
          "| median ratio | spread (sd of log ratio) |")
    print("|---|---|---:|---|---:|---:|---:|---:|")
    for s in summary:
        print("| %s | %s | %d (%d) | %s | %d | %d (%d) | %.2f | %.3f |" % (
            s["grid"], s["order"], s["trials"], s["loaded"], s["reference"], s["contradicting"], s["inconclusive"],
            s["inconclusive_loaded"], s["ratio_median"], s["spread"]))
    print()
    for name in names:
        a = [s for s in summary if s["grid"] == name and s["order"] == "alternate"]
        b = [s for s in summary if s["grid"] == name and s["order"] == "blocked"]
        if a and b and b[0]["spread"] > 0:
            print("%s: spread interleaved %.3f vs blocked %.3f: %.0f %% lower" % (
                name, a[0]["spread"], b[0]["spread"], 100 * (1 - a[0]["spread"] / b[0]["spread"])))
    if cal_summary:
        flagged = sum(1 for c in cal_summary if c["refused"] or c["warned"])
        judged = [c for c in cal_summary if ref_winners.get(c["grid"])]
        wrong = sum(1 for c in judged if c["winner"] and c["winner"] != ref_winners[c["grid"]])
        print("calibrations under load: %d, flagged %d (refused %d, stored with --accept-load and warned %d); "
              "against a quiet reference with a clear winner (medians > 10 %% apart): %d, predicting its loser %d, "
              "confident and wrong %d" % (
                  len(cal_summary), flagged, sum(c["refused"] for c in cal_summary),
                  sum(c["warned"] for c in cal_summary), len(judged), wrong,
                  sum(c["confident_wrong"] for c in cal_summary)))
    total = sum(s["trials"] for s in summary)
    print("all: %d trials, %d confident verdicts contradicting the quiet reference, %d inconclusive (%.0f %%)" % (
        total, sum(s["contradicting"] for s in summary), sum(s["inconclusive"] for s in summary),
        100.0 * sum(s["inconclusive"] for s in summary) / max(total, 1)))


if __name__ == "__main__":
    main()
