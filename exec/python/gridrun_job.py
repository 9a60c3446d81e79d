"""gridrun_job: the one-file helper for a training program of your own run as a gridrun job.

Why it exists: gridrun measures a program it did not write through a line protocol on stdout (one
JSON object per line with a "gridrun" member, docs/own-script.md) and tells the program about its
job through environment variables (GRIDRUN_PARAMS, GRIDRUN_CHECKPOINT_DIR, ...). Both are plain
enough to use from any language; this module wraps them for Python so that a script needs three
calls instead of hand-written JSON and signal handling:

    import gridrun_job as gj
    for step, (x, y) in enumerate(loader, 1):
        loss = train_step(x, y)
        gj.log_step(loss, samples=global_batch)      # on every rank: each one's step seconds
        if gj.should_stop():                         # SIGTERM/SIGUSR1, or the job's max_steps
            break

gridrun puts the folder holding this file at the front of PYTHONPATH for every job. Outside
gridrun the functions still work (params() is {}, rank() is 0, the lines are printed anyway), so a
script behaves the same when started by hand or by torchrun. Standard library only: the job's
Python may have nothing else installed, and importing this must never fail.
"""

import json
import os
import signal
import sys

__all__ = [
    "EXIT_INPUT_ERROR", "EXIT_INTERRUPTED", "checkpoint_dir", "interrupted", "job_id", "log_epoch",
    "log_step", "log_summary", "max_steps", "params", "rank", "resume", "run_name", "should_stop",
    "steps_logged", "world_size",
]

# Exit codes gridrun reads (docs/own-script.md): 2 = the program's own input error (not retried),
# 75 = stopped on request (SIGTERM/SIGUSR1) and resumable.
EXIT_INPUT_ERROR = 2
EXIT_INTERRUPTED = 75

_params = None          # parsed GRIDRUN_PARAMS, read once
_steps = 0              # steps logged by this process (every rank counts, so should_stop agrees)
_signal = None          # the first stop signal received, or None
_handlers_installed = False


def _env_int(name, default):
    value = os.environ.get(name, "")
    try:
        return int(value) if value.strip() else default
    except ValueError:
        return default


def params():
    """The job's parameters (GRIDRUN_PARAMS, one JSON object) as a dict; {} outside gridrun."""
    global _params
    if _params is None:
        text = os.environ.get("GRIDRUN_PARAMS", "")
        try:
            value = json.loads(text) if text.strip() else {}
        except ValueError:
            # A broken variable is gridrun's bug, not the program's: say so once, run on defaults.
            print("gridrun_job: GRIDRUN_PARAMS is not JSON; using no parameters", file=sys.stderr)
            value = {}
        _params = value if isinstance(value, dict) else {}
    return dict(_params)


def job_id():
    """The job id (12 hex characters), or None outside gridrun."""
    return os.environ.get("GRIDRUN_JOB_ID") or None


def run_name():
    """The run's name, or None outside gridrun."""
    return os.environ.get("GRIDRUN_RUN") or None


def checkpoint_dir(default=None):
    """The job's own checkpoint folder (created by gridrun), else `default` (outside gridrun)."""
    return os.environ.get("GRIDRUN_CHECKPOINT_DIR") or default


def resume():
    """True when gridrun restarts this job after an interruption: load the checkpoint if any."""
    return os.environ.get("GRIDRUN_RESUME", "0") == "1"


def max_steps():
    """The job's step limit (GRIDRUN_MAX_STEPS), or None when there is none."""
    n = _env_int("GRIDRUN_MAX_STEPS", 0)
    return n if n > 0 else None


def rank():
    """This process's rank (RANK, as torch.distributed's env:// reads it); 0 when unset."""
    return _env_int("RANK", 0)


def world_size():
    """The number of ranks (WORLD_SIZE); 1 when unset."""
    return _env_int("WORLD_SIZE", 1)


def steps_logged():
    """How many times log_step was called in this process."""
    return _steps


def _number(name, value):
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    try:
        return float(value)  # numpy and torch scalars, 0-d tensors
    except (TypeError, ValueError):
        raise TypeError("gridrun_job: %s must be a number, not %r" % (name, type(value).__name__)) from None


def _emit(record):
    # Rank 0's records are the job's (docs/own-script.md). Under gridrun the other ranks print their
    # step records too: their gridrun-exec times them for the per-rank step seconds and keeps them
    # out of the log. Outside gridrun (torchrun) they would only fill the output.
    if rank() != 0 and not (record["gridrun"] == "step" and os.environ.get("GRIDRUN_JOB_ID")):
        return
    # json.dumps writes a non-finite float as NaN / Infinity (not strict JSON); gridrun reads those
    # tokens (and null) as non-finite, so a diverged loss ends the job as `diverged`.
    line = json.dumps(record) + "\n"
    # One write of the whole line, then a flush: a record must not interleave with other output
    # or wait in a buffer while gridrun measures arrival times.
    sys.stdout.write(line)
    sys.stdout.flush()


def log_step(loss, samples=None, **metrics):
    """Record one training step: its loss, the global batch (samples over all ranks) and any
    metrics of your own. Call it on every rank (it counts steps there, for should_stop, and
    times each rank's steps); rank 0's record is the job's. A `step=N` keyword numbers the step
    explicitly (after a resume)."""
    global _steps
    record = {"gridrun": "step", "loss": _number("loss", loss)}
    if samples is not None:
        record["samples"] = int(samples)
    if "step" in metrics:
        step = int(metrics.pop("step"))
        record["step"] = step
        _steps = max(_steps + 1, step) if step > 0 else _steps + 1
    else:
        _steps += 1
    for k, v in metrics.items():
        record[k] = _number(k, v)
    _emit(record)


def log_epoch(epoch, **metrics):
    """Record one epoch: train_loss, train_acc, test_loss, test_acc (accuracies as fractions),
    all optional, plus metrics of your own."""
    record = {"gridrun": "epoch", "epoch": int(epoch)}
    for k, v in metrics.items():
        record[k] = _number(k, v)
    _emit(record)


def log_summary(**metrics):
    """Record final figures of your own; gridrun merges them into the results file's /summary."""
    record = {"gridrun": "summary"}
    for k, v in metrics.items():
        record[k] = _number(k, v)
    _emit(record)


def _on_signal(signum, _frame):
    # Only note it: the training loop stops at the next step boundary, where a checkpoint is safe.
    global _signal
    if _signal is None:
        _signal = signum


def _install_handlers():
    global _handlers_installed
    if _handlers_installed:
        return
    _handlers_installed = True
    for name in ("SIGTERM", "SIGUSR1"):
        sig = getattr(signal, name, None)
        if sig is None:
            continue
        try:
            # Replaces the previous handler without chaining to it: the default action of both
            # signals is to die, which is exactly what asking should_stop() opts out of.
            signal.signal(sig, _on_signal)
        except ValueError:
            pass  # not the main thread: Python allows handlers only there


def interrupted():
    """True once SIGTERM or SIGUSR1 was received (after should_stop() installed the handlers).
    Exit with EXIT_INTERRUPTED then, so that gridrun resumes the job later."""
    return _signal is not None


def should_stop():
    """True once SIGTERM or SIGUSR1 was received, or the job's max_steps steps were logged.

    The first call installs the signal handlers (a program that never asks keeps the default
    action, so a stop request still ends it). With several ranks a signal reaches each at its
    own moment: agree on the answer (e.g. all-reduce it) before leaving a collective loop."""
    _install_handlers()
    if _signal is not None:
        return True
    limit = max_steps()
    return limit is not None and _steps >= limit
