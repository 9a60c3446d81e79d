#!/usr/bin/env python3
"""Hostile files in a run folder, third round (issue 57): no special file hangs a command, no read is
unbounded, nothing outside the run is written through a link, no id read from a file names a path.

Real binaries, real files. Two runs are made in seconds: `done2`, two finished jobs written by
gridrun-test-make-run (state.json, grid.yaml, job files, results and their index), and `failed2`, two
jobs `gridrun run` launched with a trainer that exits 1 at once (logs, heartbeat-less failures,
launch token, lock). Then, on a fresh copy each time:

  files    every kind of run file gridrun reads back (state.json, results/.gridrun-index, a results
           file (only ever opened by libhdf5 once it is a regular file), grid.yaml,
           a job file, a heartbeat, a job's .err log, launch-token, lock, calibration.json,
           prediction.json) replaced by a FIFO nobody writes and by a link to /dev/zero; then
           status, ls, report, export (csv) and run, each under `timeout 60` and a 2 GB
           address-space limit (RLIMIT_AS, as `ulimit -v 2000000`): no hang (exit 124), no crash
           (a signal, std::bad_alloc, std::terminate), a clear exit code; where the file is one a
           command must name (state.json), the output names it.
  cache    the SHA-256 cache of `gridrun plan` as a FIFO and as a /dev/zero link: plan ends.
  logs     logs/ID.out and .err as links to files outside the run: `gridrun run` warns naming the
           log, replaces the link, and the files outside are byte for byte as they were.
  ids      a job id '../../../../TMP/x' in state.json, with a FIFO at TMP/x.out.heartbeat: status
           and ls end, name state.json and the id, and list no such job.
  workers  a `workers` link to a victim folder holding w1/ and w2/: `run --launch warm` refuses it,
           naming it, and the victim's files are as they were.
  dead     a job "running" in state.json of a run whose lock nobody holds: status says interrupted,
           ls counts no running job.
  killed   a real kill -9 of `gridrun run` mid-job: status and ls show no running job, say
           interrupted and give the command that resumes the run (grid file and --out).
  state-only  a folder holding only a state.json that says 2 jobs completed: status and ls count
           them pending, not done, with a warning naming state.json and the missing files.
  tensorboard  `export --format tensorboard` into a folder holding another experiment's event
           files (in DIR and in a run folder): they stay, byte for byte, each named once; gridrun's
           earlier files are replaced; a run folder that is a link elsewhere is refused, untouched.

    e2e_hostile.py GRIDRUN GRIDRUN_TEST_MAKE_RUN
"""
import hashlib
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

GRIDRUN, MAKE_RUN = (os.path.abspath(a) for a in sys.argv[1:3])
FAILED = []
AS_LIMIT = 2_000_000 * 1024  # ulimit -v 2000000 (KiB)

BASE = ("defaults: {model: mlp, dataset: synthetic, device: cpu, threads_per_rank: 1, epochs: 1,\n"
        "           train_samples: 64, test_samples: 16, batch_per_rank: 16, optimizer: sgd}\n"
        "grid:\n  lr: [0.05, 0.1]\n")


def check(cond, what):
    if not cond:
        FAILED.append(what)
        print("FAIL:", what, flush=True)
    return cond


def limit_memory():
    resource.setrlimit(resource.RLIMIT_AS, (AS_LIMIT, AS_LIMIT))


def run(argv, cwd, env=None):
    """argv under `timeout 60` with the address-space limit: (exit code, stdout + stderr)."""
    p = subprocess.run(["timeout", "60"] + [str(a) for a in argv], cwd=cwd, capture_output=True, text=True,
                       errors="replace", preexec_fn=limit_memory, env=env)
    return p.returncode, p.stdout + p.stderr


def sound(what, code, out):
    """No hang, no crash, no unnamed failure."""
    ok = check(code != 124, f"{what}: hung (timeout 60 ended it)")
    ok = check(0 <= code <= 3, f"{what}: exit {code} (a signal or a crash): {out[-400:]}") and ok
    for bad in ("bad_alloc", "terminate called", "Segmentation", "Aborted"):
        ok = check(bad not in out, f"{what}: {bad!r} in its output: {out[-400:]}") and ok
    return ok


def job_ids(run_dir):
    with open(os.path.join(run_dir, "state.json")) as f:
        return sorted(json.load(f)["jobs"])


def make_runs(tmp):
    for name in ("done2", "failed2", "cache"):
        with open(os.path.join(tmp, name + ".yaml"), "w") as f:
            f.write("name: %s\n%s" % (name, BASE))
    fake = os.path.join(tmp, "fail.sh")
    with open(fake, "w") as f:
        f.write("#!/bin/sh\necho 'fake trainer: exits at once' >&2\nexit 1\n")
    os.chmod(fake, 0o755)
    for argv, want in (([MAKE_RUN, "done2.yaml", "runs"], 0),
                       ([GRIDRUN, "run", "failed2.yaml", "--out", "runs", "--train-bin", fake, "--retries", "0",
                         "--no-report"], 1)):
        p = subprocess.run(argv, cwd=tmp, capture_output=True, text=True, timeout=300)
        if not check(p.returncode == want, f"{' '.join(argv[:3])}: exit {p.returncode}, expected {want}: "
                                           f"{p.stderr[-500:]}"):
            return None
    # The index is written by the first command that reads the results folder.
    subprocess.run([GRIDRUN, "status", "runs/done2"], cwd=tmp, capture_output=True, timeout=60)
    return fake


def commands(fake, grid):
    return {
        "status": ["status", "{run}"],
        "ls": ["ls", "{run}"],
        "report": ["report", "{run}"],
        "export": ["export", "{run}", "--what", "jobs", "--format", "csv"],
        "run": ["run", grid, "--out", "{out}", "--train-bin", fake, "--retries", "0", "--no-report"],
    }


def check_files(tmp, fake):
    for source in ("done2", "failed2"):
        src = os.path.join(tmp, "runs", source)
        ids = job_ids(src)
        kinds = {
            "state.json": "state.json",
            "results index": "results/.gridrun-index",
            "results file": "results/%s.h5" % ids[0],
            "grid copy": "grid.yaml",
            "job file": "jobs/%s.json" % ids[0],
            "heartbeat": "logs/%s.out.heartbeat" % ids[0],
            "job log": "logs/%s.err" % ids[0],
            "launch token": "launch-token",
            "lock": "lock",
            "calibration": "calibration.json",
            "prediction": "prediction.json",
        }
        for kind, rel in kinds.items():
            for how in ("fifo", "/dev/zero link"):
                out = os.path.join(tmp, "copies")
                shutil.rmtree(out, ignore_errors=True)
                run_dir = os.path.join(out, source)
                shutil.copytree(src, run_dir, symlinks=True)
                path = os.path.join(run_dir, rel)
                os.makedirs(os.path.dirname(path), exist_ok=True)
                if os.path.lexists(path):
                    os.remove(path)
                if how == "fifo":
                    os.mkfifo(path, 0o600)
                else:
                    os.symlink("/dev/zero", path)
                for name, argv in commands(fake, os.path.join(tmp, source + ".yaml")).items():
                    argv = [a.replace("{run}", run_dir).replace("{out}", out) for a in argv]
                    code, text = run([GRIDRUN] + argv, cwd=tmp)
                    what = f"{source}: {kind} as a {how}: gridrun {name}"
                    if not sound(what, code, text):
                        continue
                    if kind == "state.json" and name in ("status", "run"):
                        check("state.json" in text, f"{what}: does not name state.json: {text[-400:]}")
                    # `run` replaces or quarantines what it cannot use; it never leaves a FIFO it had to read.
                    if name == "run" and kind in ("state.json", "grid copy", "job file", "launch token"):
                        check(not os.path.lexists(path) or os.path.isfile(path) and not os.path.islink(path),
                              f"{what}: {rel} is still not a regular file")
                print(f"ok: {source}: {kind} as a {how}", flush=True)


def check_cache(tmp):
    data = os.path.join(tmp, "data.bin")
    with open(data, "wb") as f:
        f.write(b"not an HDF5 file\n")
    grid = os.path.join(tmp, "plan.yaml")
    with open(grid, "w") as g:
        g.write("name: p\ndefaults: {dataset: hdf5, data_file: %s, model: mlp, epochs: 1}\n" % data)
    for how in ("fifo", "/dev/zero link"):
        cache = os.path.join(tmp, "xdg-" + how.replace("/", "").replace(" ", "-"))
        os.makedirs(os.path.join(cache, "gridrun"))
        path = os.path.join(cache, "gridrun", "sha256.json")
        if how == "fifo":
            os.mkfifo(path, 0o600)
        else:
            os.symlink("/dev/zero", path)
        code, text = run([GRIDRUN, "plan", grid], cwd=tmp, env=dict(os.environ, XDG_CACHE_HOME=cache))
        if sound(f"plan with the SHA-256 cache as a {how}", code, text):
            check(code == 2 and data in text, f"plan with the cache as a {how}: exit {code}, expected 2 naming "
                                              f"the data file: {text[-300:]}")
            print(f"ok: plan with the SHA-256 cache as a {how}", flush=True)


def digest(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def check_logs(tmp, fake):
    out = os.path.join(tmp, "logs-case")
    shutil.rmtree(out, ignore_errors=True)
    run_dir = os.path.join(out, "failed2")
    shutil.copytree(os.path.join(tmp, "runs", "failed2"), run_dir, symlinks=True)
    victims = os.path.join(tmp, "victims")
    os.makedirs(victims, exist_ok=True)
    before = {}
    jid = job_ids(run_dir)[0]
    for ext in ("out", "err"):
        victim = os.path.join(victims, "victim." + ext)
        with open(victim, "w") as f:
            f.write("another experiment's %s\n" % ext)
        before[victim] = digest(victim)
        log = os.path.join(run_dir, "logs", "%s.%s" % (jid, ext))
        os.remove(log)
        os.symlink(victim, log)
    code, text = run([GRIDRUN, "run", os.path.join(tmp, "failed2.yaml"), "--out", out, "--train-bin", fake,
                      "--retries", "0", "--no-report"], cwd=tmp)
    if not sound("run with logs linked outside the run", code, text):
        return
    for victim, sha in before.items():
        check(digest(victim) == sha, f"run with linked logs: {victim} outside the run was written")
    for ext in ("out", "err"):
        log = os.path.join(run_dir, "logs", "%s.%s" % (jid, ext))
        check(os.path.isfile(log) and not os.path.islink(log), f"run with linked logs: {log} is still a link")
        check(log in text and "symbolic link" in text, f"run with linked logs: no warning naming {log}: {text[-600:]}")
    with open(os.path.join(run_dir, "logs", jid + ".err")) as f:
        check("fake trainer: exits at once" in f.read(), "run with linked logs: the job's output is not in its own log")
    print("ok: logs linked outside the run", flush=True)


def check_ids(tmp):
    out = os.path.join(tmp, "ids-case")
    shutil.rmtree(out, ignore_errors=True)
    run_dir = os.path.join(out, "done2")
    shutil.copytree(os.path.join(tmp, "runs", "done2"), run_dir, symlinks=True)
    outside = os.path.join(tmp, "outside")
    os.makedirs(outside, exist_ok=True)
    os.mkfifo(os.path.join(outside, "x.out.heartbeat"), 0o600)  # read, it would block for ever
    # From logs/ the id climbs to / and back down to TMP/outside/x.
    bad = "../../../.." + os.path.join(outside, "x")
    with open(os.path.join(run_dir, "state.json")) as f:
        state = json.load(f)
    state.pop("checksum", None)  # a hand edit: no checksum
    state["jobs"][bad] = {"state": "running", "attempts": 1, "start_unix": 1.0}
    with open(os.path.join(run_dir, "state.json"), "w") as f:
        json.dump(state, f)
    for name, argv in (("status", ["status", run_dir]), ("ls", ["ls", run_dir, "--format", "json"])):
        code, text = run([GRIDRUN] + argv, cwd=tmp)
        if not sound(f"a path-like id in state.json: {name}", code, text):
            continue
        check(code == 0, f"a path-like id: {name}: exit {code}: {text[-300:]}")
        if name == "status":
            check("is not a job id" in text and "state.json" in text,
                  f"a path-like id: status does not name state.json and the id: {text[-500:]}")
            table = text.split("damaged")[0]
            check("outside/x" not in table, f"a path-like id: status lists it as a job: {table[-500:]}")
        else:
            rows = json.loads(text[text.index("["):text.rindex("]") + 1]) if "[" in text else []
            check(rows and rows[0].get("jobs") == 2 and rows[0].get("running") == 0,
                  f"a path-like id: ls counts {rows[0] if rows else text[-300:]}")
    print("ok: a path-like id in state.json", flush=True)


def tree_digest(root):
    """Every file under root (links not followed) with its content's hash: what must not change."""
    out = {}
    for folder, dirs, files in os.walk(root):
        for f in files + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            p = os.path.join(folder, f)
            out[os.path.relpath(p, root)] = os.readlink(p) if os.path.islink(p) else digest(p)
    return out


def check_workers_link(tmp, fake):
    out = os.path.join(tmp, "workers-case")
    shutil.rmtree(out, ignore_errors=True)
    run_dir = os.path.join(out, "failed2")
    shutil.copytree(os.path.join(tmp, "runs", "failed2"), run_dir, symlinks=True)
    victim = os.path.join(tmp, "victim-workers")
    for w in ("w1", "w2"):
        os.makedirs(os.path.join(victim, w), exist_ok=True)
        for name in ("done", "task.0", "notes.txt"):
            with open(os.path.join(victim, w, name), "w") as f:
                f.write("another experiment's %s/%s\n" % (w, name))
    before = tree_digest(victim)
    # The copied run ran warm (the default): its own workers folder makes way for the link.
    shutil.rmtree(os.path.join(run_dir, "workers"), ignore_errors=True)
    os.symlink(victim, os.path.join(run_dir, "workers"))
    code, text = run([GRIDRUN, "run", os.path.join(tmp, "failed2.yaml"), "--out", out, "--train-bin", fake,
                      "--retries", "0", "--no-report", "--launch", "warm"], cwd=tmp)
    if sound("run --launch warm with a workers link", code, text):
        check(tree_digest(victim) == before, "run --launch warm with a workers link: the folder it names changed")
        check("workers" in text and "symbolic link" in text,
              f"run --launch warm with a workers link: no message naming it: {text[-600:]}")
        print("ok: a workers link in the run folder", flush=True)


def check_tensorboard(tmp):
    run_dir = os.path.join(tmp, "runs", "done2")
    tb = os.path.join(tmp, "tb")
    code, text = run([GRIDRUN, "export", run_dir, "--format", "tensorboard", "--out", tb], cwd=tmp)
    if not sound("export --format tensorboard", code, text) or not check(code == 0, f"tensorboard export: {text}"):
        return
    folders = sorted(d for d in os.listdir(tb) if os.path.isdir(os.path.join(tb, d)))
    foreign = [os.path.join(tb, "events.out.tfevents.1700000000.elsewhere.1.0"),
               os.path.join(tb, folders[0], "events.out.tfevents.1700000000.elsewhere.1.0")]
    for f in foreign:
        with open(f, "wb") as out:
            out.write(b"another experiment's events")
    # A run folder that is a link to a folder elsewhere: refused, nothing written or removed there.
    victim = os.path.join(tmp, "victim-tb")
    os.makedirs(victim, exist_ok=True)
    with open(os.path.join(victim, "events.out.tfevents.1700000000.elsewhere.2.0"), "wb") as out:
        out.write(b"a victim's events")
    before = {f: digest(f) for f in foreign}
    victim_before = tree_digest(victim)
    code, text = run([GRIDRUN, "export", run_dir, "--format", "tensorboard", "--out", tb], cwd=tmp)
    if sound("export --format tensorboard again, with foreign event files", code, text):
        check(code == 0, f"second tensorboard export: exit {code}: {text[-400:]}")
        for f, sha in before.items():
            check(os.path.exists(f) and digest(f) == sha, f"tensorboard export: foreign {f} removed or changed")
            check(text.count(f) == 1, f"tensorboard export: foreign {f} not named once: {text[-600:]}")
        for d in folders:
            own = [n for n in os.listdir(os.path.join(tb, d)) if n.startswith("events.") and "elsewhere" not in n]
            check(len(own) == 1, f"tensorboard export: {d} holds {own}, expected one file of gridrun's")
    shutil.rmtree(os.path.join(tb, folders[1]))
    os.symlink(victim, os.path.join(tb, folders[1]))
    code, text = run([GRIDRUN, "export", run_dir, "--format", "tensorboard", "--out", tb], cwd=tmp)
    if sound("export --format tensorboard with a run folder linked elsewhere", code, text):
        check(code != 0 and folders[1] in text, f"tensorboard export through a link: exit {code}: {text[-400:]}")
        check(tree_digest(victim) == victim_before, "tensorboard export through a link: the folder it names changed")
    print("ok: tensorboard export with foreign files and a linked run folder", flush=True)


def check_dead_run(tmp):
    """A run whose lock nobody holds (a kill -9 of `gridrun run` leaves state.json saying running)."""
    out = os.path.join(tmp, "dead-case")
    shutil.rmtree(out, ignore_errors=True)
    run_dir = os.path.join(out, "failed2")
    shutil.copytree(os.path.join(tmp, "runs", "failed2"), run_dir, symlinks=True)
    with open(os.path.join(run_dir, "state.json")) as f:
        state = json.load(f)
    state.pop("checksum", None)
    jid = job_ids(run_dir)[0]
    state["jobs"][jid].update({"state": "running", "end_unix": 0})
    with open(os.path.join(run_dir, "state.json"), "w") as f:
        json.dump(state, f)
    code, text = run([GRIDRUN, "status", run_dir, "--format", "json"], cwd=tmp)
    if sound("status of a run whose lock is free", code, text):
        try:
            states = {j["id"]: j["state"] for j in json.loads(text[text.index("{"):text.rindex("}") + 1])["jobs"]}
        except (ValueError, KeyError):
            states = {}
        check(code == 0 and states.get(jid) == "interrupted" and "running" not in states.values(),
              f"status of a run whose lock is free: {states or text[-600:]}")
    code, text = run([GRIDRUN, "ls", run_dir, "--format", "json"], cwd=tmp)
    if sound("ls of a run whose lock is free", code, text):
        rows = json.loads(text[text.index("["):text.rindex("]") + 1]) if "[" in text else []
        check(rows and rows[0].get("running") == 0, f"ls of a run whose lock is free: {rows or text[-300:]}")
    print("ok: a run whose lock is free shows no running job", flush=True)


def poll(what, cond, deadline_s=60):
    """cond() until truthy, with a deadline (a wait for a state change, not a sleep as a sync)."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        v = cond()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("gave up waiting for " + what)


def running_in_state(run_dir):
    try:
        with open(os.path.join(run_dir, "state.json")) as f:
            return [j for j, r in json.load(f)["jobs"].items() if r.get("state") == "running"]
    except (OSError, ValueError, KeyError):
        return []


def check_killed_run(tmp):
    """A real kill -9 of `gridrun run` mid-job: status and ls say interrupted, with the command that
    resumes the run; no job shows running (issue 57, finding 7)."""
    out = os.path.join(tmp, "killed-case")
    # The trainer stands in for a long job: it runs until gridrun (--owner-pid) is gone, as
    # gridrun-train does, so nothing outlives the case.
    slow = os.path.join(tmp, "slow.sh")
    with open(slow, "w") as f:
        f.write('#!/bin/sh\nwhile [ "$1" != --owner-pid ] && [ $# -gt 0 ]; do shift; done\n'
                'while kill -0 "$2" 2>/dev/null; do sleep 0.2; done\nexit 75\n')
    os.chmod(slow, 0o755)
    grid = os.path.join(tmp, "killed.yaml")
    with open(grid, "w") as f:
        f.write("name: killed\n%s" % BASE)
    p = subprocess.Popen([GRIDRUN, "run", grid, "--out", out, "--train-bin", slow, "--no-report"], cwd=tmp,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    run_dir = os.path.join(out, "killed")
    try:
        poll("a running job in state.json", lambda: running_in_state(run_dir))
    finally:
        p.kill()
        p.wait()
    check(running_in_state(run_dir), "killed run: state.json no longer says running (nothing to check)")
    code, text = run([GRIDRUN, "status", run_dir, "--format", "json"], cwd=tmp)
    if sound("status after a kill -9 of gridrun run", code, text):
        st = json.loads(text[text.index("{"):text.rindex("}") + 1]) if "{" in text else {}
        states = [j["state"] for j in st.get("jobs", [])]
        check(code == 0 and "running" not in states and "interrupted" in states,
              f"status after a kill -9: states {states}: {text[-400:]}")
        cmd = st.get("resume_command") or ""
        check(st.get("interrupted") is True and cmd.startswith("gridrun run ") and grid in cmd and out in cmd,
              f"status after a kill -9: no resume command naming the grid and --out: {cmd!r}")
    code, text = run([GRIDRUN, "status", run_dir], cwd=tmp)
    if sound("status (table) after a kill -9", code, text):
        check("interrupted: no gridrun runs it" in text and "resume with: gridrun run " + grid in text,
              f"status table after a kill -9: {text[-600:]}")
    code, text = run([GRIDRUN, "ls", out, "--format", "json"], cwd=tmp)
    if sound("ls after a kill -9", code, text):
        rows = json.loads(text[text.index("["):text.rindex("]") + 1]) if "[" in text else []
        check(rows and rows[0].get("running") == 0 and rows[0].get("interrupted") is True and
              grid in (rows[0].get("resume_command") or ""), f"ls after a kill -9: {rows or text[-300:]}")
    code, text = run([GRIDRUN, "ls", out, "-w", "300"], cwd=tmp)
    if sound("ls (table) after a kill -9", code, text):
        check("interrupted: resume with gridrun run " + grid in text, f"ls table after a kill -9: {text[-400:]}")
    print("ok: status and ls after a kill -9 of gridrun run", flush=True)


def check_state_only(tmp):
    """A folder holding only a state.json that calls its jobs finished: not counted done, a warning."""
    run_dir = os.path.join(tmp, "state-only", "done2")
    os.makedirs(run_dir)
    shutil.copy(os.path.join(tmp, "runs", "done2", "state.json"), run_dir)
    code, text = run([GRIDRUN, "status", run_dir, "--format", "json"], cwd=tmp)
    if sound("status of a folder holding only state.json", code, text):
        st = json.loads(text[text.index("{"):text.rindex("}") + 1]) if "{" in text else {}
        counts = st.get("counts", {})
        warns = " ".join(st.get("warnings", []))
        check(code == 0 and counts.get("pending") == 2 and not counts.get("completed"),
              f"state.json only: status counts {counts}")
        check("2 job(s) recorded as finished have no results file" in warns and "state.json" in warns,
              f"state.json only: no warning naming state.json and the missing files: {warns or text[-400:]}")
    code, text = run([GRIDRUN, "ls", os.path.dirname(run_dir), "--format", "json"], cwd=tmp)
    if sound("ls of a folder holding only state.json", code, text):
        rows = json.loads(text[text.index("["):text.rindex("]") + 1]) if "[" in text else []
        check(rows and rows[0].get("done") == 0 and rows[0].get("pending") == 2 and
              "no results file" in (rows[0].get("problem") or ""), f"state.json only: ls {rows or text[-300:]}")
    print("ok: a folder holding only state.json", flush=True)


def main():
    tmp = tempfile.mkdtemp(prefix="gridrun-e2e-hostile-")
    try:
        fake = make_runs(tmp)
        if fake:
            check_files(tmp, fake)
            check_cache(tmp)
            check_logs(tmp, fake)
            check_ids(tmp)
            check_workers_link(tmp, fake)
            check_tensorboard(tmp)
            check_dead_run(tmp)
            check_killed_run(tmp)
            check_state_only(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILED:
        print("%d check(s) failed" % len(FAILED))
        return 1
    print("e2e_hostile: all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
