#!/usr/bin/env python3
"""Sweep habits (issue 58): `--set KEY=A,B` makes an axis, `report --sort METRIC --top N` shows the
best jobs. The real binaries, nothing trained (seconds):

plan: `--set lr=0.05,0.1` plans two jobs, each with the id that `--set lr=0.05` and `--set lr=0.1`
give alone; a list over a key the grid varies replaces its axis; a bad value exits 2 naming the
flag and the value; a free string keeps its commas (mlp_hidden=512,256 is one value).
run: `gridrun run --set lr=0.05,0.1` with a trainer that exits 1 at once: state.json records one
KEY=VALUE per value, status shows the two jobs with their lr, and report re-expands the run's
grid with the recorded list (no "does not load" line).
sample: a grid with a sample: section plans the same ids twice with the same seed and other ids
with another; a bad distribution exits 2 at its line. --set ranks=1 and --only ranks=2 on a grid
that compares by ranks warn that the comparison is gone; a list or another key does not.
gridrun-test-make-run with lists (--set ranks=1,2 --set lr=0.05,0.1 on a grid of two models):
status lists the eight jobs done with those values; report shows the same eight, none left out.
report --sort: a run of 6 jobs with distinct figures (make-run --spread): --sort test_acc --top 3
gives 3 rows in the order of export's final_test_acc, largest first, in json and in the table;
--sort p50_ms smallest first; wall_s:asc gets a column; an unknown metric exits 2 with a
did-you-mean and the names; --top without --sort exits 2.

    e2e_sweep.py GRIDRUN GRIDRUN_TEST_MAKE_RUN
"""
import json
import os
import subprocess
import sys
import tempfile

GRIDRUN, MAKE_RUN = (os.path.abspath(a) for a in sys.argv[1:3])
FAILED = []

BASE = ("defaults: {model: mlp, dataset: synthetic, device: cpu, threads_per_rank: 1, epochs: 1,\n"
        "           train_samples: 256, test_samples: 64, batch_per_rank: 32}\n")
GRIDS = {
    "one": "name: one\n" + BASE,  # a single job: every job of a list comes from --set
    "ranks": "name: ranks\n" + BASE + "grid:\n  model: [mlp, lenet]\n  ranks: [1, 2]\n",
    "six": "name: six\n" + BASE + "grid:\n  lr: [0.01, 0.02, 0.03]\n  ranks: [1, 2]\n",
    "sampled": "name: sampled\n" + BASE + "grid:\n  ranks: [1, 2]\nsample:\n  n: 5\n  seed: 3\n"
               "  lr: {loguniform: [1.0e-4, 1.0e-1]}\n  momentum: {uniform: [0.8, 0.99]}\n"
               "  warmup_steps: {randint: [0, 50]}\n",
    "compared": "name: compared\n" + BASE + "grid:\n  model: [mlp, lenet]\n  ranks: [1, 2]\ncompare: {by: ranks}\n",
}


def check(cond, what):
    if not cond:
        FAILED.append(what)
        print("FAIL:", what)
    return cond


def gridrun(*args, cwd):
    return subprocess.run([GRIDRUN, *map(str, args)], capture_output=True, text=True, timeout=120, cwd=cwd)


def plan_jobs(tmp, *args):
    p = gridrun("plan", *args, "--format", "json", cwd=tmp)
    check(p.returncode == 0, f"plan {' '.join(args)}: exit {p.returncode}: {p.stderr[:300]}")
    try:
        return json.loads(p.stdout)["jobs"]
    except (ValueError, KeyError):
        check(False, f"plan {' '.join(args)} --format json: {p.stdout[:200]!r}")
        return []


def check_plan(tmp):
    jobs = plan_jobs(tmp, "one.yaml", "--set", "lr=0.05,0.1")
    check([j["params"]["lr"] for j in jobs] == [0.05, 0.1], f"--set lr=0.05,0.1 plans {[j['params'] for j in jobs]}")
    alone = [plan_jobs(tmp, "one.yaml", "--set", f"lr={v}")[0]["id"] for v in ("0.05", "0.1")]
    check([j["id"] for j in jobs] == alone, f"--set lr=0.05,0.1 ids {[j['id'] for j in jobs]}, alone {alone}")
    p = gridrun("plan", "one.yaml", "--set", "lr=0.05,0.1", cwd=tmp)
    check(p.returncode == 0 and "2 jobs, 0 warnings" in p.stdout, f"plan table: {p.stdout[-200:]!r}")
    # The grid's own axis over the key is replaced: 2 models x 3 ranks, no duplicates dropped.
    jobs = plan_jobs(tmp, "ranks.yaml", "--set", "ranks=1,2,4")
    got = [(j["params"]["model"], j["params"]["ranks"]) for j in jobs]
    want = [(m, r) for m in ("mlp", "lenet") for r in (1, 2, 4)]
    check(got == want, f"--set ranks=1,2,4 over grid ranks [1, 2]: {got}")
    # A free string keeps its commas.
    jobs = plan_jobs(tmp, "one.yaml", "--set", "mlp_hidden=512,256")
    check([j["params"]["mlp_hidden"] for j in jobs] == ["512,256"], f"mlp_hidden=512,256: {jobs}")
    # Bad values: exit 2, the flag and the value named, nothing on stdout.
    for bad, words in ((["--set", "lr=0.1,abc"], ["--set lr=0.1,abc", "'abc'"]),
                       (["--set", "epochs=1,x"], ["--set epochs=1,x", "'x'"]),
                       (["--set", "lr=0.1,0.1"], ["--set lr=0.1,0.1", "given twice"])):
        for cmd in ("plan", "run"):
            p = gridrun(cmd, "one.yaml", *bad, cwd=tmp)
            check(p.returncode == 2 and all(w in p.stderr for w in words) and not p.stdout,
                  f"{cmd} {' '.join(bad)}: exit {p.returncode}, stderr {p.stderr[:300]!r}")


def check_sample(tmp):
    """A sampled grid: the same ids in two plans with the same seed, others with another seed, the
    sampled values in plan's table; a bad distribution exits 2 at its file:line:col."""
    first, again = plan_jobs(tmp, "sampled.yaml"), plan_jobs(tmp, "sampled.yaml")
    check(len(first) == 10 and [j["id"] for j in first] == [j["id"] for j in again],
          f"sampled grid: {len(first)} jobs, ids {[j['id'] for j in first]} then {[j['id'] for j in again]}")
    lrs = [j["params"]["lr"] for j in first]
    check(all(1e-4 <= lr <= 0.1 for lr in lrs) and len(set(lrs)) == 5 and lrs[:5] == lrs[5:],
          f"sampled lr values {lrs}")
    with open(os.path.join(tmp, "sampled.yaml")) as f:
        text = f.read()
    with open(os.path.join(tmp, "sampled-seed4.yaml"), "w") as f:
        f.write(text.replace("seed: 3", "seed: 4"))
    other = plan_jobs(tmp, "sampled-seed4.yaml")
    check(len(other) == 10 and not {j["id"] for j in other} & {j["id"] for j in first},
          f"another seed gives other ids: {[j['id'] for j in other]}")
    p = gridrun("plan", "sampled.yaml", cwd=tmp)
    check(p.returncode == 0 and "lr" in p.stdout.splitlines()[1] and f"{lrs[0]:g}" in p.stdout,
          f"plan table shows the sampled values: {p.stdout[:400]!r}")
    with open(os.path.join(tmp, "bad-sample.yaml"), "w") as f:
        f.write(text.replace("loguniform: [1.0e-4, 1.0e-1]", "loguniform: [0, 1.0e-1]"))
    p = gridrun("plan", "bad-sample.yaml", cwd=tmp)
    check(p.returncode == 2 and "bad-sample.yaml:9:21: sample.lr.loguniform[0]: 0.0 is out of range" in p.stderr and not p.stdout,
          f"bad sample: exit {p.returncode}, {p.stderr[:300]!r}")


def check_compare_gone(tmp):
    """--set or --only that leaves one value of the compare key says the comparison is gone."""
    for flags, given in ((["--set", "ranks=1"], "--set ranks=1"), (["--only", "ranks=2"], "--only ranks=2")):
        p = gridrun("plan", "compared.yaml", *flags, cwd=tmp)
        want = (f"warning: {given} leaves one value of ranks, which this grid compares (compare: ranks, at "
                "compared.yaml:7:15): the report will have no ranks comparison")
        check(p.returncode == 0 and want in p.stderr and "2 jobs" in p.stdout,
              f"plan {given} on a compare-by-ranks grid: exit {p.returncode}, {p.stderr[:400]!r}")
    for flags in (["--set", "ranks=1,2"], ["--set", "model=mlp"], ["--only", "model=mlp"]):
        p = gridrun("plan", "compared.yaml", *flags, cwd=tmp)
        check(p.returncode == 0 and "which this grid compares" not in p.stderr,
              f"plan {' '.join(flags)} keeps the comparison: {p.stderr[:300]!r}")


def status_json(tmp, run_dir):
    p = gridrun("status", run_dir, "-f", "json", cwd=tmp)
    check(p.returncode == 0, f"status {run_dir}: exit {p.returncode}: {p.stderr[:300]}")
    try:
        return json.loads(p.stdout)
    except ValueError:
        check(False, f"status {run_dir} -f json: {p.stdout[:200]!r}")
        return {}


def report_jobs(tmp, run_dir, *args):
    """The jobs table's rows of `report -f json`, and the process."""
    p = gridrun("report", run_dir, "-f", "json", *args, cwd=tmp)
    try:
        tables = json.loads(p.stdout or "{}").get("tables", [])
    except ValueError:
        tables = []
    table = next((t for t in tables if t.get("title", "").startswith("Jobs")), {})
    return table, p


def check_runs(tmp):
    fake = os.path.join(tmp, "fail.sh")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\necho 'fake trainer: exits at once' >&2\nexit 1\n")
    os.chmod(fake, 0o755)
    p = gridrun("run", "one.yaml", "--out", "runs", "--set", "lr=0.05,0.1", "--train-bin", fake,
                "--retries", "0", "--no-report", cwd=tmp)
    check(p.returncode == 1, f"run --set lr=0.05,0.1 (failing trainer): exit {p.returncode}: {p.stderr[-300:]}")
    with open(os.path.join(tmp, "runs", "one", "state.json")) as f:
        overrides = json.load(f).get("overrides")
    check(overrides == ["lr=0.05", "lr=0.1"], f"state.json overrides {overrides}")
    st = status_json(tmp, "runs/one")
    rows = sorted((j["params"].get("lr"), j["state"]) for j in st.get("jobs", []))
    check(rows == [("0.05", "failed"), ("0.1", "failed")], f"status of the --set list run: {rows}")
    # The trainer wrote no results file, so the report has no rows; it still loads the run's grid
    # with the recorded list (a list it could not read would say "does not load").
    _, p = report_jobs(tmp, "runs/one")
    check(p.returncode == 0 and "does not load" not in p.stderr,
          f"report re-expands the grid with the recorded list: exit {p.returncode}, {p.stderr[:300]!r}")
    check(st.get("resume_command", "") == "" or "--set lr=0.05 --set lr=0.1" in st.get("resume_command", ""),
          f"status resume command: {st.get('resume_command')}")

    p = subprocess.run([MAKE_RUN, "ranks.yaml", "runs", "--set", "ranks=1,2", "--set", "lr=0.05,0.1"],
                       capture_output=True, text=True, timeout=120, cwd=tmp)
    check(p.returncode == 0, f"make-run --set lists: exit {p.returncode}: {p.stderr[-300:]}")
    st = status_json(tmp, "runs/ranks")
    got = sorted((j["params"].get("model"), j["params"].get("ranks"), j["params"].get("lr")) for j in st.get("jobs", []))
    want = sorted((m, r, lr) for m in ("mlp", "lenet") for r in ("1", "2") for lr in ("0.05", "0.1"))
    check(got == want and st.get("counts") == {"completed": 8}, f"status of make-run lists: {got}, {st.get('counts')}")
    table, p = report_jobs(tmp, "runs/ranks")
    got = sorted((r.get("model"), r.get("ranks"), r.get("lr")) for r in table.get("rows", []))
    want = sorted((m, r, lr) for m in ("mlp", "lenet") for r in (1, 2) for lr in (0.05, 0.1))
    check(p.returncode == 0 and got == want and "does not load" not in p.stderr
          and "not in its current grid" not in json.dumps(table),
          f"report of make-run lists: exit {p.returncode}, rows {got}, {p.stderr[:300]!r}")


def check_sort(tmp):
    p = subprocess.run([MAKE_RUN, "six.yaml", "runs", "--spread"], capture_output=True, text=True, timeout=120,
                       cwd=tmp)
    if not check(p.returncode == 0, f"make-run --spread: exit {p.returncode}: {p.stderr[-300:]}"):
        return
    ex = gridrun("export", "runs/six", "--what", "jobs", "-f", "json", cwd=tmp)
    figures = {r["job_id"]: r for r in json.loads(ex.stdout or "[]")}
    by_acc = sorted(figures, key=lambda i: -figures[i]["final_test_acc"])
    check(len(set(figures[i]["final_test_acc"] for i in figures)) == 6, f"make-run --spread: {figures}")

    table, p = report_jobs(tmp, "runs/six", "--sort", "test_acc", "--top", "3")
    ids = [r["id"] for r in table.get("rows", [])]
    check(p.returncode == 0 and ids == by_acc[:3], f"report --sort test_acc --top 3: {ids}, expected {by_acc[:3]}")
    accs = [r.get("test_acc") for r in table.get("rows", [])]
    check(accs == sorted(accs, reverse=True), f"--sort test_acc: test_acc column {accs}")
    check(any("the first 3 of 6 jobs" in n for n in table.get("notes", [])), f"--top note: {table.get('notes')}")
    p = gridrun("report", "runs/six", "--sort", "test_acc", "--top", "3", "-w", "100", cwd=tmp)
    shown = [line.split()[0] for line in p.stdout.splitlines() if line.split() and line.split()[0] in figures]
    check(p.returncode == 0 and shown[:3] == by_acc[:3] and len(set(shown)) == 3,
          f"report --sort test_acc --top 3 (table): ids {shown}")

    by_p50 = sorted(figures, key=lambda i: figures[i]["step_s_p50"])
    table, p = report_jobs(tmp, "runs/six", "--sort", "p50_ms")
    ids = [r["id"] for r in table.get("rows", [])]
    check(p.returncode == 0 and ids == by_p50, f"report --sort p50_ms: {ids}, expected {by_p50}")
    table, p = report_jobs(tmp, "runs/six", "--sort", "step_s_p50:desc", "--top", "2")
    ids = [r["id"] for r in table.get("rows", [])]
    check(p.returncode == 0 and ids == by_p50[::-1][:2], f"report --sort step_s_p50:desc --top 2: {ids}")
    table, p = report_jobs(tmp, "runs/six", "--sort", "wall_s:asc")
    check(p.returncode == 0 and "wall_s" in table.get("columns", []), f"--sort wall_s:asc: {table.get('columns')}")

    for args, words in ((["--sort", "tset_acc"], ["--sort tset_acc", "did you mean 'test_acc'?", "samples/s",
                                                  "wall_s"]),
                        (["--sort", "test_acc:up"], ["METRIC:asc|desc"]),
                        (["--top", "3"], ["--top 3", "--sort"]),
                        (["--sort", "test_acc", "--top", "0"], ["--top 0"])):
        p = gridrun("report", "runs/six", *args, cwd=tmp)
        check(p.returncode == 2 and all(w in p.stderr for w in words) and not p.stdout,
              f"report {' '.join(args)}: exit {p.returncode}, stderr {p.stderr[:400]!r}")
    p = gridrun("report", "runs/six", "runs/ranks", "--sort", "test_acc", cwd=tmp)
    check(p.returncode == 2 and "--sort" in p.stderr, f"report A B --sort: exit {p.returncode}, {p.stderr[:200]!r}")


def main():
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in GRIDS.items():
            with open(os.path.join(tmp, name + ".yaml"), "w") as f:
                f.write(text)
        check_plan(tmp)
        check_sample(tmp)
        check_compare_gone(tmp)
        check_runs(tmp)
        check_sort(tmp)
    print("sweep:", "FAILED " + str(len(FAILED)) if FAILED else "all checks passed")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
