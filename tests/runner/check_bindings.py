#!/usr/bin/python3
"""No C++ runtime interposition: every libstdc++ symbol our LibTorch binaries use binds to libstdc++.

Why: PyTorch's CUDA wheel exports copies of some libstdc++ symbols (std::filesystem among them)
built against another C++ runtime. On the H100 image the dynamic linker bound gridrun's
std::filesystem::remove_all to libtorch's copy, and the call crashed. runner/CMakeLists.txt makes
libstdc++ the first needed library of every executable that links gridrun::runner; this test runs
each binary with LD_BIND_NOW=1 LD_DEBUG=bindings (every reference bound at start and logged) and
fails if a symbol the binary references with a GLIBCXX/CXXABI version, or any std::filesystem
symbol, was bound to a library other than libstdc++. On a machine whose LibTorch exports no such
copies (Debian's) it still checks the first-needed order with readelf.

Usage: check_bindings.py BINARY [ARGS...]   (ARGS: a quick invocation, e.g. --help)
"""
import os
import re
import subprocess
import sys

LINE = re.compile(r"binding file (\S+) \[\d+\] to (\S+) \[\d+\]: normal symbol `([^']+)'(?: \[([^\]]+)\])?")


def needed(binary):
    out = subprocess.run(["readelf", "-d", binary], stdout=subprocess.PIPE, text=True,
                         check=True).stdout
    return re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", out)


def main():
    binary, args = sys.argv[1], sys.argv[2:]
    libs = needed(binary)
    assert libs, f"{binary}: no NEEDED entries"
    # What matters is the search order between the two C++ runtimes' exporters: libstdc++ must be
    # searched before any LibTorch library (plain C libraries such as libz may come first).
    std = [i for i, l in enumerate(libs) if l.startswith("libstdc++")]
    torch = [i for i, l in enumerate(libs) if l.startswith(("libtorch", "libc10"))]
    assert std, f"{binary}: libstdc++ is not a needed library (order: {libs})"
    assert not torch or std[0] < torch[0], (
        f"{binary}: {libs[torch[0]]} is searched before libstdc++ (order: {libs})")

    env = dict(os.environ, LD_BIND_NOW="1", LD_DEBUG="bindings")
    p = subprocess.run([binary] + args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                       text=True, env=env, timeout=120)
    bad, seen = [], 0
    for m in LINE.finditer(p.stderr):
        src, dst, sym, ver = m.groups()
        if os.path.basename(src) != os.path.basename(binary):
            continue  # only our binary's own references: libraries resolve among themselves
        runtime_sym = (ver or "").startswith(("GLIBCXX", "CXXABI")) or "St10filesystem" in sym
        if not runtime_sym:
            continue
        seen += 1
        # Copy-relocated data (vtables, typeinfo) legitimately binds to the binary's own copy.
        if "libstdc++" not in os.path.basename(dst) and os.path.basename(dst) != os.path.basename(binary):
            bad.append(f"{sym} [{ver}] -> {dst}")
    assert seen > 0, f"{binary}: LD_DEBUG=bindings logged no libstdc++ binding (exit {p.returncode})"
    assert not bad, f"{binary}: {len(bad)} libstdc++ symbol(s) bound elsewhere:\n  " + "\n  ".join(bad[:20])
    print(f"{binary}: {seen} libstdc++ bindings, all to libstdc++ (needed: {libs[:4]} ...)")


if __name__ == "__main__":
    main()
