#!/usr/bin/env python3
"""The folders' dependency rules, checked against the code (issue 36).

docs/architecture.md's folder table says what each module may depend on; this reads that table and
every source file of every module, and fails on:
  - an `#include "gridrun/<folder>/..."` of a folder the table does not allow (an arrow that runs
    up or sideways), or a module folder missing from the table;
  - LibTorch headers outside runner/, MPI or NCCL headers outside runner/comm/;
  - a CMake module (gridrun_module) whose target_link_libraries names a gridrun:: module that the
    table does not allow.
Usage: check_layers.py SOURCE_DIR    (--self-test: first checks that a planted violation is found)
"""
import pathlib
import re
import sys
import tempfile


def check(root):
    """The problems found in the tree at `root`, one line each."""
    doc = (root / "docs/architecture.md").read_text()
    allowed = {}
    for line in doc.splitlines():
        m = re.match(r"\| `([a-z]+)/` \|.*\| ([^|]*) \|$", line)
        if m:
            deps = re.sub(r"\([^)]*\)", "", m.group(2))  # parentheses explain, they allow nothing
            allowed[m.group(1)] = {d.strip() for d in re.findall(r"\b([a-z]+)\b", deps)}
    return check_tree(root, allowed)


def check_tree(root, allowed):
    modules = sorted(p.parent.name for p in root.glob("*/CMakeLists.txt")
                     if p.parent.name not in ("tests", "bench", "cmake", "build", "examples", "docs"))
    problems = []
    for m in modules:
        if m not in allowed:
            problems.append(f"docs/architecture.md: folder {m}/ is missing from the folder table")
    include = re.compile(r'#\s*include\s*[<"]([^">]+)[">]')
    for m in modules:
        may = allowed.get(m, set()) | {m}
        for f in sorted((root / m).rglob("*")):
            if f.suffix not in (".cpp", ".hpp", ".h", ".in") or "vendor" in f.parts:
                continue
            rel = f.relative_to(root)
            for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
                inc = include.match(line.strip())
                if not inc:
                    continue
                path = inc.group(1)
                g = re.match(r"gridrun/([a-z]+)/", path)
                if g and g.group(1) not in may:
                    problems.append(f"{rel}:{n}: includes {path}, but {m}/ may not depend on {g.group(1)}/")
                if re.match(r"(torch|ATen|c10|caffe2)/", path) and m != "runner":
                    problems.append(f"{rel}:{n}: LibTorch header {path} outside runner/")
                if re.match(r"(mpi|nccl)\.h$", path) and rel.parts[:2] != ("runner", "comm"):
                    problems.append(f"{rel}:{n}: MPI/NCCL header {path} outside runner/comm/")
        cmake = (root / m / "CMakeLists.txt").read_text()
        for link in re.findall(r"target_link_libraries\(gridrun_" + m + r"\b([^)]*)\)", cmake):
            for dep in re.findall(r"gridrun::([a-z_]+)", link):
                if dep not in may and dep != "cxx_runtime_first":
                    problems.append(f"{m}/CMakeLists.txt: gridrun_{m} links gridrun::{dep}, not allowed by the table")
    return problems


def self_test():
    """A planted upward include and a LibTorch header outside runner/ must both be found."""
    with tempfile.TemporaryDirectory() as t:
        r = pathlib.Path(t)
        (r / "docs").mkdir()
        (r / "docs/architecture.md").write_text(
            "| `base/` | x | nlohmann-json |\n| `jobs/` | y | base (not jobs) |\n")
        for m in ("base", "jobs"):
            (r / m / "src").mkdir(parents=True)
            (r / m / "CMakeLists.txt").write_text(f"target_link_libraries(gridrun_{m} PUBLIC gridrun::base)\n")
        (r / "base/src/a.cpp").write_text('#include "gridrun/jobs/job.hpp"\n#include <torch/torch.h>\n')
        (r / "jobs/src/b.cpp").write_text('#include "gridrun/base/json.hpp"\n')
        found = check(r)
        want = ["base/src/a.cpp:1", "base/src/a.cpp:2"]
        if len(found) != 2 or not all(any(w in f for f in found) for w in want):
            print("check_layers: self-test failed, found:", found)
            sys.exit(1)


if "--self-test" in sys.argv:
    self_test()
    sys.argv.remove("--self-test")
root = pathlib.Path(sys.argv[1] if len(sys.argv) > 1 else ".")
problems = check(root)
for p in problems:
    print(p)
print(f"check_layers: {len(problems)} problem(s)")
sys.exit(1 if problems else 0)
