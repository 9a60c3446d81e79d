"""Runs of many jobs (issue 36): every command reads each job file once, through the results
folder's index, and one verdict per file holds for every command.

bitflip_among_200: a finished run of 201 jobs (real JobWriter files, gridrun-test-make-run), one of
  them replaced by a bit-flipped file that crashes libhdf5: `status` (table/json/csv), `collect` and
  `report` exit 0, name that file exactly once and show the other 200; a stale index (files written
  after it) and a damaged index are rebuilt and give the same answers; `gridrun run` then
  quarantines the file and trains that job for real, and every report has all 201.
bitflipped_copies: copies of a finished 6-job run, each with 1-8 bytes flipped in one job file (a
  fixed seed): whatever collect or report cannot read is quarantined and redone by the next
  `gridrun run`, and after it every job is in every report.

Usage: e2e_many.py GRIDRUN GRIDRUN_TRAIN MAKE_RUN BITFLIP_H5 CASE
"""
import json
import os
import random
import shutil
import subprocess
import sys
import tempfile

GRIDRUN, TRAIN, MAKE_RUN, BITFLIP, CASE = sys.argv[1:6]
WORK = tempfile.mkdtemp(prefix="gridrun-e2e-many-")
SMALL = """defaults:
  model: mlp
  dataset: synthetic
  device: cpu
  threads_per_rank: 1
  train_samples: 256
  test_samples: 64
  batch_per_rank: 32
  epochs: 1
  lr: 0.05
"""


def grid(name, n):
    path = os.path.join(WORK, name + ".yaml")
    with open(path, "w") as f:
        f.write("name: %s\n%sseeds: [%s]\n" % (name, SMALL, ", ".join(map(str, range(n)))))
    return path


def gr(*args, ok=True):
    p = subprocess.run([GRIDRUN] + list(args), text=True, capture_output=True)
    if ok and p.returncode != 0:
        sys.exit("FAIL: gridrun %s exited %d\n%s\n%s" % (" ".join(args), p.returncode, p.stdout, p.stderr))
    return p


def check(cond, what):
    if not cond:
        sys.exit("FAIL: " + what)


def report_ids(run_dir):
    p = gr("report", run_dir, "--format", "json")
    jobs = json.loads(p.stdout)
    tables = jobs if isinstance(jobs, list) else jobs.get("tables", [])
    ids = set()
    for t in tables:
        if t.get("title") == "Jobs":
            for row in t["rows"]:
                ids.add(row[t["columns"].index("id")] if isinstance(row, list) else row["id"])
    return ids, p


def status_json(run_dir):
    return json.loads(gr("status", run_dir, "--format", "json").stdout)


def train(g, out):
    return subprocess.run([GRIDRUN, "run", g, "--out", out, "--train-bin", TRAIN, "--no-report"],
                          text=True, capture_output=True)


def bitflip_among_200():
    g = grid("many", 201)
    out = os.path.join(WORK, "runs")
    subprocess.run([MAKE_RUN, g, out], check=True, capture_output=True)
    run = os.path.join(out, "many")
    results = os.path.join(run, "results")
    names = sorted(n for n in os.listdir(results) if n.endswith(".h5"))
    check(len(names) == 201, "201 job files written, found %d" % len(names))
    bad = names[100]
    shutil.copyfile(BITFLIP, os.path.join(results, bad))
    bad_id = bad[:-3]
    good = {n[:-3] for n in names} - {bad_id}

    def all_commands(label):
        for fmt in ("table", "json", "csv"):
            p = gr("status", run, "--format", fmt)
            if fmt == "json":
                st = json.loads(p.stdout)
                done = {j["id"] for j in st["jobs"] if j["state"] == "completed"}
                check(good <= done, "%s: status json shows the 200 good jobs completed" % label)
        p = gr("collect", run)
        said = p.stdout + p.stderr
        check(said.count(bad) == 1, "%s: collect names %s once:\n%s" % (label, bad, said))
        check("indexed 200 job(s)" in said, "%s: collect indexed the 200 others:\n%s" % (label, said))
        ids, p = report_ids(run)
        check(ids == good, "%s: report shows the 200 good jobs (%d shown)" % (label, len(ids)))
        check((p.stdout + p.stderr).count(bad) == 1, "%s: report names %s once:\n%s" % (label, bad, p.stderr))

    all_commands("first read")
    index = os.path.join(results, ".gridrun-index")
    check(os.path.exists(index), "the results folder has its index after a status")
    all_commands("from the index")
    # Stale: 10 files written again after the index (new inodes, new contents), 5 removed and
    # written back later: the index answers for none of them.
    subprocess.run([MAKE_RUN, g, out, "--rewrite", "10"], check=True, capture_output=True)
    all_commands("stale index")
    # Damaged: torn, then garbage.
    data = open(index, "rb").read()
    open(index, "wb").write(data[: len(data) // 2])
    all_commands("torn index")
    open(index, "wb").write(b"\x00garbage" * 100)
    all_commands("garbage index")
    check(open(index, "rb").read(14) == b"GRIDRUN-INDEX-", "the damaged index was written again whole")
    # The run quarantines exactly that file (the reports' verdict) and trains that job for real.
    p = train(g, out)
    check(p.returncode == 0, "gridrun run redoes the damaged job:\n%s\n%s" % (p.stdout, p.stderr))
    check(os.path.exists(os.path.join(results, bad + ".damaged")), "the damaged file is quarantined")
    check("1 to run" in p.stdout, "only the damaged job runs again:\n" + p.stdout)
    ids, p = report_ids(run)
    check(ids == good | {bad_id}, "after the rerun the report shows all 201 (%d)" % len(ids))
    st = status_json(run)
    check(all(j["state"] == "completed" for j in st["jobs"]), "all 201 completed after the rerun")


def bitflipped_copies():
    g = grid("six", 6)
    base_out = os.path.join(WORK, "base")
    subprocess.run([MAKE_RUN, g, base_out], check=True, capture_output=True)
    rng = random.Random(36)
    unreadable_copies = 0
    for copy in range(24):
        out = os.path.join(WORK, "copy%d" % copy)
        shutil.copytree(base_out, out)
        run = os.path.join(out, "six")
        results = os.path.join(run, "results")
        names = sorted(n for n in os.listdir(results) if n.endswith(".h5"))
        victim = os.path.join(results, rng.choice(names))
        data = bytearray(open(victim, "rb").read())
        for _ in range(rng.randint(1, 8)):
            data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        open(victim, "wb").write(bytes(data))
        ids, p = report_ids(run)
        c = gr("collect", run)
        unreadable = len(ids) < 6 or "skipped" in c.stdout + c.stderr
        unreadable_copies += unreadable
        r = train(g, out)
        check(r.returncode == 0, "copy %d: gridrun run exits 0:\n%s\n%s" % (copy, r.stdout, r.stderr))
        if unreadable:
            check(os.path.exists(victim + ".damaged"), "copy %d: the unreadable file is quarantined" % copy)
            check("1 to run" in r.stdout, "copy %d: the damaged job runs again:\n%s" % (copy, r.stdout))
        ids, p = report_ids(run)
        check(len(ids) == 6, "copy %d: after the run every job is in the report (%d)" % (copy, len(ids)))
        c = gr("collect", run)
        check("indexed 6 job(s)" in c.stdout + c.stderr, "copy %d: collect indexes all 6" % copy)
        shutil.rmtree(out)
    print("bitflipped_copies: %d of 24 copies had a file collect/report could not read" % unreadable_copies)
    check(unreadable_copies > 0, "the seed flips at least one file into unreadability")


{"bitflip_among_200": bitflip_among_200, "bitflipped_copies": bitflipped_copies}[CASE]()
shutil.rmtree(WORK)
print("PASS", CASE)
