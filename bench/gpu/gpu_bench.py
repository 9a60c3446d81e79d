#!/usr/bin/env python3
"""gridrun-train against PyTorch at its best on the same GPU (bench/gpu.sh and scripts/gpu-check.sh drive it).

Two halves, so that a short device lease can time-box each and still print what it has:

  anchor  PyTorch training of the anchor's ResNets (../shared/gpu/pytorch_eager_anchor.py: its
          model, optimizer, data and step) in the modes a PyTorch user would try: eager, eager_cl
          (channels_last), compile, compile_cl, compile_ro (torch.compile "reduce-overhead": CUDA
          graphs). One process, one model per configuration; each compiled configuration's compile
          time (the first step, which traces and compiles forward and backward) is recorded apart
          from its rate; the rate is the median of --repeats windows of --steps steps after
          --warmup steps. Each result is appended to --out as one JSON line the moment it exists.
  table   The markdown table: per row every PyTorch mode measured, the best of them, gridrun's
          contiguous and channels_last eager figures and its cuda_graph figure (medians over the
          completed job files of the run folders given, e.g. `gridrun run bench/gpu/formats.yaml`),
          gridrun's default (the layout `memory_format: auto` picks, from --default-format) and
          gridrun's best, each as a ratio to PyTorch's best eager and best overall mode.

Why two processes and JSON lines: a lease that ends mid-step keeps every configuration finished
before it, and the table can be remade on any machine from what came back.
"""
import argparse
import glob
import json
import os
import statistics
import sys
import time

ANCHOR_MODES = ("eager", "eager_cl", "compile", "compile_cl", "compile_ro")


def attr_text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def summary_of(f):
    """/summary and the status of an open job file."""
    import numpy as np
    g = f["summary"]
    out = {k: float(g.attrs[k]) for k in g.attrs}
    for k in g:
        try:
            out[k] = float(np.asarray(g[k][()]).reshape(-1)[0])
        except (TypeError, ValueError):
            pass
    out["status"] = attr_text(f.attrs["status"])
    return out


def gridrun_results(dirs):
    """(model, batch, precision, variant) -> [summary], variant in contiguous|channels_last|graph,
    from the completed, unprofiled job files of run folders (or their results/ folders)."""
    import h5py
    out = {}
    for d in dirs:
        paths = sorted(glob.glob(os.path.join(d, "results", "*.h5")) + glob.glob(os.path.join(d, "*.h5")))
        for path in paths:
            try:
                with h5py.File(path, "r") as f:
                    a = f.attrs
                    if int(a.get("param.profile_steps", 0)) > 0:
                        continue  # the profiler slows its steps: not a rate
                    graph = attr_text(a.get("param.cuda_graph", "false")) in ("1", "true", "True")
                    fmt = attr_text(a.get("param.memory_format", "auto"))
                    cfg = (attr_text(a["param.model"]), int(a["param.batch_per_rank"]),
                           attr_text(a["param.precision"]), "graph" if graph else fmt)
                    s = summary_of(f)
            except (OSError, KeyError, ValueError) as e:
                sys.stderr.write(f"gpu_bench: {path}: {e}\n")
                continue
            if s["status"] == "completed" and s.get("samples_per_s_wall", 0) > 0:
                out.setdefault(cfg, []).append(s)
    return out


def load_anchor_module(path):
    import importlib.util
    spec = importlib.util.spec_from_file_location("anchor", path)
    mod = importlib.util.module_from_spec(spec)
    # Registered before it runs: torch.compile's tracer imports the module of the code it traces by
    # name, and an unregistered one fails every compiled mode with "No module named 'anchor'".
    sys.modules["anchor"] = mod
    spec.loader.exec_module(mod)
    return mod


def anchor_one(mod, depth, batch, prec, mode, a):
    """One configuration in one mode: the anchor's model and step (bench() in the anchor file,
    which prints one window and returns nothing), timed as --repeats windows after a warm-up."""
    import torch
    import torch.nn.functional as F
    torch._dynamo.reset()
    torch.manual_seed(0)
    dev = a.device
    sync = torch.cuda.synchronize if dev == "cuda" else (lambda: None)
    m = mod.resnet(depth).to(dev)
    cl = mode.endswith("_cl") or mode == "compile_ro"
    if cl:
        m = m.to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(m.parameters(), lr=0.05, momentum=0.9)
    if mode == "compile_ro":
        f = torch.compile(m, mode="reduce-overhead")
    elif mode.startswith("compile"):
        f = torch.compile(m)
    else:
        f = m
    x = torch.randn(batch, 3, 32, 32, device=dev)
    y = torch.randint(0, 10, (batch,), device=dev)
    if cl:
        x = x.contiguous(memory_format=torch.channels_last)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(dev, dtype=torch.bfloat16, enabled=(prec == "bf16")):
            loss = F.cross_entropy(f(x), y)
        loss.backward()
        opt.step()

    sync()
    t = time.perf_counter()
    step()
    sync()
    first_s = time.perf_counter() - t
    for _ in range(a.warmup - 1):
        step()
    rates = []
    for _ in range(a.repeats):
        sync()
        t = time.perf_counter()
        for _ in range(a.steps):
            step()
        sync()
        rates.append(batch * a.steps / (time.perf_counter() - t))
    del f, m, opt
    if dev == "cuda":
        torch.cuda.empty_cache()
    return {"model": f"resnet{depth}", "batch": batch, "precision": prec, "mode": mode,
            "samples_per_s": statistics.median(rates), "windows": rates,
            "compile_s": first_s if mode.startswith("compile") else None,
            "first_step_s": first_s, "steps": a.steps, "warmup": a.warmup}


def cmd_anchor(a):
    import torch
    mod = load_anchor_module(a.anchor)
    torch.backends.cudnn.benchmark = True  # as the anchor's __main__ does
    configs = configs_of(a)
    modes = a.modes.split(",")
    bad = [m for m in modes if m not in ANCHOR_MODES]
    if bad:
        sys.exit(f"gpu_bench anchor: --modes: unknown {bad} (choices: {','.join(ANCHOR_MODES)})")
    meta = {"torch": torch.__version__, "cuda": torch.version.cuda,
            "gpu": torch.cuda.get_device_name(0) if a.device == "cuda" else "cpu", "anchor": os.path.abspath(a.anchor)}
    with open(a.out, "a", encoding="utf-8") as out:
        # The order given is the priority when a lease is short: --order mode runs one mode over
        # every configuration before the next mode.
        order = ([(c, mo) for mo in modes for c in configs] if a.order == "mode"
                 else [(c, mo) for c in configs for mo in modes])
        for cfg, mode in order:
                m, b, p = cfg
                try:
                    r = anchor_one(mod, int(m[len("resnet"):]), b, p, mode, a)
                except Exception as e:  # a mode that fails (a compiler error) is a row, not the end
                    r = {"model": m, "batch": b, "precision": p, "mode": mode, "error": repr(e)[:300]}
                r.update(meta)
                out.write(json.dumps(r) + "\n")
                out.flush()
                print(f"anchor {m} b{b} {p} {mode}: "
                      + (f"{r['samples_per_s']:,.0f} samples/s"
                         + (f", compile {r['compile_s']:.1f} s" if r.get("compile_s") else "")
                         if "samples_per_s" in r else r["error"]), flush=True)


def read_anchor(paths):
    out = {}
    meta = {}
    for p in paths:
        with open(p, encoding="utf-8") as f:
            for line in f:
                line = line.strip()
                if not line:
                    continue
                try:
                    r = json.loads(line)
                except ValueError:
                    continue  # a line cut by the end of a lease
                if "samples_per_s" in r:
                    out[(r["model"], int(r["batch"]), r["precision"], r["mode"])] = r
                    meta = {k: r.get(k) for k in ("torch", "cuda", "gpu", "anchor")}
    return out, meta


def configs_of(a):
    """(model, batch, precision) in the order given: --configs, else the product of the lists."""
    if getattr(a, "configs", None):
        out = []
        for c in a.configs.split(","):
            m, b, p = c.split(":")
            out.append((m, int(b), p))
        return out
    return [(m, int(b), p) for m in a.models.split(",") for b in a.batches.split(",")
            for p in a.precisions.split(",")]


def fmt(x):
    return "-" if x is None else f"{x:,.0f}"


def ratio(x, y):
    return "-" if x is None or not y else f"{x / y:.2f}"


def cmd_table(a):
    anchors, meta = read_anchor(a.anchor_results)
    grid = gridrun_results(a.runs)
    configs = configs_of(a)
    med = lambda rs: statistics.median(r["samples_per_s_wall"] for r in rs) if rs else None
    print("| model | batch | prec | eager | eager_cl | compile | compile_cl | compile_ro | best PyTorch "
          "| gridrun NCHW | gridrun NHWC | gridrun cuda_graph | default / best eager | best / best eager "
          "| best / best PyTorch | n |")
    print("|---|---:|---|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|---:|---|")
    compile_times = []
    for (m, b, p) in configs:
        an = {mode: anchors.get((m, b, p, mode)) for mode in ANCHOR_MODES}
        rate = {mode: (r["samples_per_s"] if r else None) for mode, r in an.items()}
        eager_best = max((v for k, v in rate.items() if k.startswith("eager") and v), default=None)
        best_mode, best = max(((k, v) for k, v in rate.items() if v), key=lambda kv: kv[1],
                              default=("-", None))
        g = {v: grid.get((m, b, p, v), []) for v in ("contiguous", "channels_last", "graph")}
        gm = {v: med(rs) for v, rs in g.items()}
        default = gm[a.default_format]
        gbest = max((v for v in gm.values() if v), default=None)
        n = "/".join(str(len(g[v])) for v in ("contiguous", "channels_last", "graph"))
        print(f"| {m} | {b} | {p} | " + " | ".join(fmt(rate[k]) for k in ANCHOR_MODES)
              + f" | {best_mode} | {fmt(gm['contiguous'])} | {fmt(gm['channels_last'])} | {fmt(gm['graph'])}"
              f" | {ratio(default, eager_best)} | {ratio(gbest, eager_best)} | {ratio(gbest, best)} | {n} |")
        for k in ANCHOR_MODES:
            if an[k] and an[k].get("compile_s"):
                compile_times.append(f"{m} b{b} {p} {k} {an[k]['compile_s']:.0f} s")
    print()
    print(f"samples/s; PyTorch: median of its windows (anchor {meta.get('anchor', '?')}, torch "
          f"{meta.get('torch', '?')}, CUDA {meta.get('cuda', '?')}, {meta.get('gpu', '?')}); gridrun: "
          f"median over completed job files (n = NCHW/NHWC/cuda_graph files), wall-clock rate of "
          f"the timed steps; default = `memory_format: auto` = {a.default_format}.")
    if compile_times:
        print("torch.compile time (first step: trace + compile of forward and backward): "
              + "; ".join(compile_times) + ".")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    for name in ("anchor", "table"):
        p = sub.add_parser(name)
        p.add_argument("--models", default="resnet18,resnet50")
        p.add_argument("--batches", default="32,128,512")
        p.add_argument("--precisions", default="fp32,bf16")
        p.add_argument("--configs", default="",
                       help="MODEL:BATCH:PRECISION,... in this order, instead of the product")
    an = sub.choices["anchor"]
    an.add_argument("--anchor", required=True, help="pytorch_eager_anchor.py (its resnet())")
    an.add_argument("--modes", default="eager,eager_cl",
                    help=f"comma-separated, of {','.join(ANCHOR_MODES)}")
    an.add_argument("--steps", type=int, default=20, help="steps per timed window")
    an.add_argument("--warmup", type=int, default=10, help="steps before the first window")
    an.add_argument("--repeats", type=int, default=5, help="timed windows; the rate is their median")
    an.add_argument("--order", default="config", choices=("config", "mode"),
                    help="config: every mode of a configuration before the next; mode: one mode "
                    "over every configuration before the next mode")
    an.add_argument("--out", required=True, help="JSON lines file, appended to")
    an.add_argument("--device", default="cuda", choices=("cuda", "cpu"),
                    help="cpu: a smoke run of this script on a machine without a GPU (its rates "
                    "say nothing about a GPU)")
    tb = sub.choices["table"]
    tb.add_argument("--anchor-results", nargs="*", default=[], help="JSON lines files of `anchor`")
    tb.add_argument("--runs", nargs="*", default=[], help="run folders (or folders of job files)")
    tb.add_argument("--default-format", default="channels_last", choices=("contiguous", "channels_last"),
                    help="the layout memory_format: auto picks for these conv nets on the GPU")
    a = ap.parse_args()
    if a.cmd == "anchor" and min(a.steps, a.warmup, a.repeats) < 1:
        sys.exit("gpu_bench anchor: --steps, --warmup and --repeats must be >= 1")
    {"anchor": cmd_anchor, "table": cmd_table}[a.cmd](a)


if __name__ == "__main__":
    main()
