#!/usr/bin/env python3
"""`gridrun worker-msg` (issue 59, one codec): the Slurm task script writes a warm worker's task
message and checks its done message with it instead of hand-made JSON and substring matching.
Checked on the real binary: a task line holds every field as given (quotes and backslashes in a
path included) and is one line; a done line is the job's only with its ticket and its id, says
`next` or `retiring`, and anything else (another ticket, another job, a malformed, empty or
over-long line) exits 1 with the reason, never 0. Bad flags exit 2.
Usage: e2e_worker_msg.py GRIDRUN"""
import json
import subprocess
import sys

GRIDRUN = sys.argv[1]
TICKET = "0123456789abcdef0123456789abcdef"


def msg(*args, stdin=""):
    return subprocess.run([GRIDRUN, "worker-msg", *args], input=stdin, capture_output=True, text=True,
                          timeout=60)


# task: every field as given, one line.
odd = '/runs/a "quoted" name\\with a backslash/logs/x.err'
p = msg("task", "/runs/r/jobs/abc.json", "--ticket", TICKET, "--launched-at", "1700000000.123456",
        "--log-out", "/runs/r/logs/abc.out", "--log-err", odd, "--resume")
assert p.returncode == 0 and p.stdout.endswith("\n") and p.stdout.count("\n") == 1, p
t = json.loads(p.stdout)
assert t == {"job": "/runs/r/jobs/abc.json", "resume": True, "launched_at": 1700000000.123456,
             "heartbeat": "", "log_out": "/runs/r/logs/abc.out", "log_err": odd, "ticket": TICKET}, t
p = msg("task", "/runs/r/jobs/abc.json", "--ticket", TICKET)
assert p.returncode == 0 and json.loads(p.stdout)["resume"] is False, p

# done: the worker's message about that job, with its ticket.
done = {"job": "abc", "code": 0, "rss_bytes": 123456789.0, "retiring": False, "ticket": TICKET, "pid": 4242}
p = msg("done", "abc", "--ticket", TICKET, stdin=json.dumps(done) + "\n")
assert p.returncode == 0 and p.stdout == "next\n", p
p = msg("done", "abc", "--ticket", TICKET, stdin=json.dumps(dict(done, retiring=True)) + "\n")
assert p.returncode == 0 and p.stdout == "retiring\n", p
refused = {
    "another ticket": json.dumps(dict(done, ticket="f" * 32)),
    "another job": json.dumps(dict(done, job="abd")),
    "a ticket in another member": json.dumps(dict(done, ticket="", note=TICKET)),
    "not JSON": '"ticket":"%s","job":"abc"' % TICKET,
    "empty": "",
    "over-long": json.dumps(dict(done, pad="x" * 5000)),
}
for what, line in refused.items():
    p = msg("done", "abc", "--ticket", TICKET, stdin=line + "\n")
    assert p.returncode == 1 and p.stdout == "" and p.stderr.startswith("worker-msg done: "), (what, p)

# Bad input: exit 2 naming what is wrong.
for args, word in ((["task", "/j.json"], "--ticket"), (["send", "/j.json", "--ticket", TICKET], "task or done"),
                   (["done", "--ticket", TICKET], "JOB")):
    p = msg(*args)
    assert p.returncode == 2 and word in p.stderr, (args, p)
print("worker-msg: a task line holds every field as given; a done line counts only as its job's with "
      "its ticket (6 other lines refused, exit 1); bad flags exit 2")
