#!/usr/bin/env python3
"""Prints the counts of a ctest run from its JUnit file (`ctest --output-junit FILE`): passed,
failed, and skipped grouped by reason. The reason is the test's own last "SKIP: ..." line
(tests/needs.sh and the scenarios print one), else the message of a GoogleTest GTEST_SKIP, else
what ctest recorded. A test ctest did not run
for another cause (missing executable, failed fixture) is counted as failed, as ctest counts it.

    ctest-summary.py [--tails N] [--slowest N] JUNIT.xml [JUNIT.xml ...]
        several files: the lanes of scripts/test.sh, added up. --tails N: first the last N lines of
        each failed test's output (at most 4 tests), so that the end of a long CI log, often all
        that is kept of it, still says why a test failed. --slowest N: then the N tests that took
        longest, with their seconds (what to look at when the suite's time grows: a CI run must
        stay under an hour).
"""
import collections
import sys
import xml.etree.ElementTree as ET

SHOW = 6  # test names listed per line before "+N more"
TAIL_TESTS = 4  # failed tests whose output --tails shows
TAIL_WIDTH = 200  # characters kept of each line of a tail


def names(tests):
    shown = ", ".join(tests[:SHOW])
    return shown + (f", +{len(tests) - SHOW} more" if len(tests) > SHOW else "")


def skip_reason(case, message):
    out = case.findtext("system-out") or ""
    lines = [l.strip() for l in out.splitlines() if l.strip().startswith("SKIP:")]
    if lines:
        return lines[-1][len("SKIP:"):].strip()
    # GoogleTest's GTEST_SKIP() << "why": a "FILE:LINE: Skipped" line, then the message.
    all_lines = out.splitlines()
    for i, l in enumerate(all_lines[:-1]):
        if l.rstrip().endswith(": Skipped") and all_lines[i + 1].strip():
            return all_lines[i + 1].strip()
    return message or "no reason given"


def print_tails(failed_cases, lines):
    for case in failed_cases[:TAIL_TESTS]:
        out = [l.rstrip()[:TAIL_WIDTH] for l in (case.findtext("system-out") or "").splitlines()]
        out = [l for l in out if l]
        print(f"\n--- {case.get('name')} failed; the last {min(lines, len(out))} of its "
              f"{len(out)} output lines:")
        for l in out[-lines:]:
            print(f"  | {l}")
    if len(failed_cases) > TAIL_TESTS:
        print(f"\n--- {len(failed_cases) - TAIL_TESTS} more failed test(s): see the log above")


def main():
    args = sys.argv[1:]
    tails = slowest = 0
    while args[:1] in (["--tails"], ["--slowest"]):
        if len(args) < 2 or not args[1].isdigit():
            sys.exit(f"ctest-summary.py: {args[0]} needs a number")
        if args[0] == "--tails":
            tails = int(args[1])
        else:
            slowest = int(args[1])
        args = args[2:]
    if not args:
        sys.exit("usage: ctest-summary.py [--tails N] [--slowest N] JUNIT.xml [JUNIT.xml ...]")
    cases = [c for f in args for c in ET.parse(f).getroot().iter("testcase")]
    passed, failed, failed_cases = [], [], []
    skipped = collections.defaultdict(list)
    for case in cases:
        name, status = case.get("name"), case.get("status")
        if status == "run":
            passed.append(name)
        elif status == "disabled":
            skipped["disabled (DISABLED property)"].append(name)
        elif status == "notrun":
            message = case.find("skipped").get("message", "") if case.find("skipped") is not None else ""
            if message.startswith("SKIP_"):  # SKIP_RETURN_CODE=77, SKIP_REGULAR_EXPRESSION_MATCHED
                skipped[skip_reason(case, message)].append(name)
            else:
                failed.append(f"{name} (not run: {message or 'unknown'})")
                failed_cases.append(case)
        else:
            failed.append(name)
            failed_cases.append(case)
    if tails:
        print_tails(failed_cases, tails)
    n_skipped = sum(len(v) for v in skipped.values())
    total = len(passed) + len(failed) + n_skipped
    what = "Test counts" if len(args) == 1 else f"Test counts of {len(args)} lanes"
    print(f"\n{what}: {len(passed)} passed, {len(failed)} failed, {n_skipped} skipped "
          f"({total} tests)")
    if failed:
        print(f"  failed: {names(failed)}")
    for reason, tests in sorted(skipped.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        print(f"  skipped {len(tests)}: {reason}: {names(tests)}")
    if slowest:
        # GoogleTest's parameterised names carry "  # GetParam() = ...": the name is enough.
        timed = sorted(((float(c.get("time") or 0), c.get("name").split("  #")[0]) for c in cases), reverse=True)
        total_s = sum(t for t, _ in timed)
        print(f"  slowest {min(slowest, len(timed))} of {total_s:.0f} s of test time: "
              + ", ".join(f"{name} {t:.0f} s" for t, name in timed[:slowest]))


if __name__ == "__main__":
    main()
