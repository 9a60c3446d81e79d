#!/usr/bin/env python3
"""The HTML report in a real browser (Debian's headless Chromium).

Builds `gridrun report RUN --html` for
  * a real run: `gridrun run examples/quickstart.yaml` with the real gridrun-train (when given),
    plus `gridrun probe` for its CPU roofs;
  * the synthetic run of gridrun-results-testwriter (GPU jobs, phases, operator profiles,
    FLOP figures: every chart kind has data there).
Each page is loaded in Chromium with no network: the page must run with no script error and no
console.error, every chart must have drawn elements (the page counts them into <body data-*>),
and a screenshot is written next to the test's build folder (report-<name>.png).
The axes are read from the rendered Chart.js objects by a probe script the test appends to a copy
of the page (so it checks what the browser drew, whatever the page's own script does): every log
axis has at least 2 tick labels, at 1, 2 or 5 x 10^n, and spans at least a decade (two jobs at
13.2 and 14.1 FLOP/byte must not land at opposite ends); an integer axis (ranks) has no
fractional tick label; one canvas per chart with data and no card without one; the charts
without data are named, each once, in the page's "not shown" lines (a CPU run: GPU power).
Also checks bad input (exit 2, nothing written) and the embedded data (roofline, peaks).
"""
import html as htmllib
import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

FAILED = []


def check(cond, what):
    if not cond:
        FAILED.append(what)
        print("FAIL:", what)
    return cond


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, **kw)


def chromium_cmd(args, profile):
    return [args.chromium, "--headless", "--no-sandbox", "--disable-gpu",
            "--disable-background-networking", "--disable-component-update", "--disable-sync",
            "--no-first-run", "--hide-scrollbars", f"--user-data-dir={profile}",
            "--virtual-time-budget=10000"]


def body_attrs(dom):
    m = re.search(r"<body([^>]*)>", dom)
    if not m:
        return {}
    return dict(re.findall(r'([\w-]+)="([^"]*)"', m.group(1)))


def embedded_data(html):
    m = re.search(r'<script type="application/json" id="gridrun-data">(.*?)</script>', html, re.S)
    return json.loads(m.group(1)) if m else None


# Appended to a copy of the page after its own scripts: writes every chart's scales as the browser
# rendered them (type, range, title, the ticks left after Chart.js's auto-skip: value and label)
# into <pre id="gridrun-test-probe">, which --dump-dom then shows.
PROBE_JS = """
(function () {
  var out = [];
  document.querySelectorAll('canvas').forEach(function (cv) {
    var ch = window.Chart && Chart.getChart(cv);
    if (!ch) return;
    var scales = {};
    Object.keys(ch.scales).forEach(function (k) {
      var s = ch.scales[k];
      scales[k] = { type: s.type, min: s.min, max: s.max,
                    title: (s.options.title && s.options.title.display) ? String(s.options.title.text) : '',
                    ticks: s.ticks.map(function (t) {
                      var l = Array.isArray(t.label) ? t.label.join(' ') : t.label;
                      return { value: t.value, label: l === undefined || l === null ? '' : String(l) };
                    }) };
    });
    out.push({ id: cv.id, scales: scales });
  });
  var pre = document.createElement('pre');
  pre.id = 'gridrun-test-probe';
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
"""

INTEGER_AXES = ("ranks", "gpus", "nodes", "epoch", "epochs")  # axis titles that count things


def check_axes(name, probe):
    """Log axes labelled and a decade wide at least; integer axes without fractional labels."""
    logs = ints = 0
    for chart in probe:
        for sid, s in chart["scales"].items():
            where = f"{name}: {chart['id']} axis {sid} ({s['title'] or 'untitled'})"
            labelled = [t for t in s["ticks"] if t["label"].strip()]
            if s["type"] == "logarithmic":
                logs += 1
                check(len(labelled) >= 2, f"{where}: log axis with {len(labelled)} tick label(s): {s['ticks'][:12]}")
                for t in labelled:
                    mant = t["value"] / 10 ** math.floor(math.log10(t["value"]) + 1e-9)
                    check(any(abs(mant - m) < 1e-6 for m in (1, 2, 5)),
                          f"{where}: log tick label {t['label']!r} at {t['value']}, not 1, 2 or 5 x 10^n")
                check(s["min"] > 0 and s["max"] / s["min"] >= 10 * (1 - 1e-9),
                      f"{where}: log axis spans {s['min']}..{s['max']}, under a decade")
            if s["title"].strip().lower() in INTEGER_AXES:
                ints += 1
                frac = [t["label"] for t in labelled if not re.fullmatch(r"-?\d+", t["label"].strip())]
                check(len(labelled) >= 2 and not frac,
                      f"{where}: integer axis with tick labels {[t['label'] for t in labelled]}")
    return logs, ints


def check_page(args, tmp, name, html_path, min_charts, expect_notes=None, expect_axes=(0, 0)):
    """Loads the page in Chromium; checks errors, drawn charts, axes, the not-shown lines; takes a
    screenshot. expect_axes: at least this many (log, integer) axes must be drawn."""
    with open(html_path, encoding="utf-8") as f:
        html = f.read()
    probed = os.path.join(tmp, f"{name}-probe.html")
    with open(probed, "w", encoding="utf-8") as f:
        head, _, tail = html.rpartition("</body>")
        f.write(head + "<script>" + PROBE_JS + "</script>\n</body>" + tail)
    # Self-contained: nothing is fetched (no src/href to other resources).
    check(not re.search(r"<(script|link|img|iframe)[^>]*\s(src|href)=", html, re.I),
          f"{name}: page references an external resource")
    check("Chart.js v4" in html and "MIT License" in html, f"{name}: Chart.js and its license embedded")
    profile = os.path.join(tmp, f"chromium-{name}")
    dump = run(chromium_cmd(args, profile) + ["--enable-logging=stderr", "--v=0", "--dump-dom",
                                               "file://" + os.path.abspath(probed)], timeout=120)
    check(dump.returncode == 0, f"{name}: chromium --dump-dom exit {dump.returncode}: {dump.stderr[-500:]}")
    attrs = body_attrs(dump.stdout)
    print(f"{name}: body attributes {attrs}")
    check("data-charts" in attrs, f"{name}: page script did not finish (no data-charts on <body>)")
    charts = int(attrs.get("data-charts", "-1"))
    ok = int(attrs.get("data-charts-ok", "-2"))
    notes = int(attrs.get("data-notes", "-1"))
    check(attrs.get("data-errors") == "0", f"{name}: script errors: {attrs.get('data-error-text')}")
    check(charts >= min_charts, f"{name}: {charts} charts drawn, expected >= {min_charts}")
    check(ok == charts, f"{name}: charts without drawn elements: {attrs.get('data-charts-empty')}")
    if expect_notes is not None:
        check(notes == expect_notes, f"{name}: {notes} charts replaced by notes, expected {expect_notes}")
    # Console errors reported by the browser itself (e.g. exceptions before our hook ran).
    console_errors = [l for l in dump.stderr.splitlines()
                      if "CONSOLE" in l and ("Uncaught" in l or "Error" in l)]
    check(not console_errors, f"{name}: console errors: {console_errors[:3]}")
    # One card with one canvas per chart with data; the charts without data have no card, only a
    # "not shown" line each (several charts with the same reason share one line).
    data = embedded_data(html) or {"charts": []}
    with_data = [c["id"] for c in data["charts"] if not c["note"]]
    without = sorted(c["id"] for c in data["charts"] if c["note"])
    cards = re.findall(r'<div class="card" id="card-([^"]+)"', dump.stdout)
    canvases = re.findall(r'<canvas[^>]* id="chart-([^"]+)"', dump.stdout)
    check(cards == with_data and canvases == with_data and charts == len(with_data),
          f"{name}: cards {cards} and canvases {canvases}, expected one each for the charts with data {with_data}")
    check(notes == len(without), f"{name}: data-notes {notes}, {len(without)} charts without data")
    lines = re.findall(r'<p class="not-shown" data-ids="([^"]*)">(.*?)</p>', dump.stdout, re.S)
    named = sorted(i for ids, _ in lines for i in ids.split())
    check(named == without, f"{name}: not-shown lines name {named}, charts without data {without}")
    for ids, text in lines:
        check("not shown" in text, f"{name}: not-shown line for {ids}: {text!r}")
    probe = re.search(r'<pre id="gridrun-test-probe">(.*?)</pre>', dump.stdout, re.S)
    check(probe is not None, f"{name}: the axis probe did not run")
    if probe:
        logs, ints = check_axes(name, json.loads(htmllib.unescape(probe.group(1))))
        print(f"{name}: {logs} log axes, {ints} integer axes checked")
        check(logs >= expect_axes[0] and ints >= expect_axes[1],
              f"{name}: {logs} log and {ints} integer axes drawn, expected >= {expect_axes}")
    shot = os.path.join(args.shots, f"report-{name}.png")
    if os.path.exists(shot):
        os.remove(shot)
    s = run(chromium_cmd(args, profile) + ["--window-size=1280,2400", f"--screenshot={shot}",
                                           "file://" + os.path.abspath(html_path)], timeout=120)
    check(s.returncode == 0 and os.path.exists(shot), f"{name}: screenshot failed: {s.stderr[-300:]}")
    if os.path.exists(shot):
        with open(shot, "rb") as f:
            png = f.read()
        check(png[:8] == b"\x89PNG\r\n\x1a\n", f"{name}: screenshot is not a PNG")
        # A blank 1280x2400 page compresses to a few KiB; drawn charts and tables do not.
        check(len(png) > 60_000, f"{name}: screenshot only {len(png)} bytes (blank page?)")
        print(f"{name}: screenshot {shot} ({len(png)} bytes)")
    return html


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gridrun", required=True)
    ap.add_argument("--testwriter", required=True)
    ap.add_argument("--train", default="", help="gridrun-train; empty or missing: synthetic run only")
    ap.add_argument("--grid", default="", help="examples/quickstart.yaml")
    ap.add_argument("--chromium",
                    default=shutil.which("chromium") or shutil.which("chromium-browser") or "chromium")
    ap.add_argument("--shots", default=os.getcwd(), help="folder for the screenshots")
    args = ap.parse_args()
    if not shutil.which(args.chromium) and not os.path.exists(args.chromium):
        print("chromium not found: install it with scripts/install-deps.sh --test")
        return 1
    os.makedirs(args.shots, exist_ok=True)
    tmp = tempfile.mkdtemp(prefix="gridrun-html-")
    try:
        # --- bad input: exit 2 and no file written ---
        syn = os.path.join(tmp, "syn")
        r = run([args.testwriter, "run", syn])
        check(r.returncode == 0, f"testwriter: {r.stderr}")
        bad = os.path.join(tmp, "no-such-dir", "r.html")
        r = run([args.gridrun, "report", syn, "--html", bad])
        check(r.returncode == 2 and "--html" in r.stderr and not os.path.exists(bad),
              f"--html into a missing folder: exit {r.returncode}, {r.stderr}")
        r = run([args.gridrun, "report", syn, "--peak-tflops", "10"])
        check(r.returncode == 2 and "--html" in r.stderr, f"--peak-tflops without --html: {r.returncode}")
        out = os.path.join(tmp, "x.html")
        r = run([args.gridrun, "report", syn, "--html", out, "--probe", os.path.join(tmp, "none.json")])
        check(r.returncode == 2 and "--probe" in r.stderr and not os.path.exists(out),
              f"--probe missing file: exit {r.returncode}, {r.stderr}")
        r = run([args.gridrun, "report", syn, "--html", out, "--peak-tflops", "-1"])
        check(r.returncode == 2 and not os.path.exists(out), f"--peak-tflops -1: exit {r.returncode}")

        # --- probe: JSON with positive figures ---
        probe = os.path.join(syn, "probe.json")
        r = run([args.gridrun, "probe", "--seconds", "0.4", "--out", probe])
        check(r.returncode == 0, f"probe: {r.stderr}")
        with open(probe) as f:
            p = json.load(f)
        for k in ("gemm_gflops_1t", "gemm_gflops_all", "triad_gbs_1t", "triad_gbs_all"):
            check(p[k] > 0, f"probe {k} = {p[k]}")
        r = run([args.gridrun, "probe", "--seconds", "0"])
        check(r.returncode == 2 and "--seconds" in r.stderr, f"probe --seconds 0: exit {r.returncode}")

        # --- synthetic run: every chart kind has data ---
        html_path = os.path.join(tmp, "synthetic.html")
        r = run([args.gridrun, "report", syn, "--html", html_path])
        check(r.returncode == 0, f"report --html (synthetic): {r.stderr}")
        html = check_page(args, tmp, "synthetic", html_path, min_charts=12, expect_notes=0, expect_axes=(2, 1))
        data = embedded_data(html)
        check(data is not None, "synthetic: embedded JSON block")
        charts = {c["id"]: c for c in data["charts"]}
        phase_ids = ("phase_makespan", "phase_throughput", "phase_target")
        for cid in ("loss", "accuracy", "scaling", "speedup", "util", "power", "roofline") + phase_ids:
            check(cid in charts and not charts[cid]["note"], f"synthetic: chart {cid} has data")
        # The phases: one quantity per chart, both axes titled, one bar per arrangement.
        for cid in phase_ids:
            c = charts[cid]
            check(len(c["bars"]) == 1 and c["xlabel"] and c["ylabel"] and not c["y1label"],
                  f"synthetic: {cid}: one quantity, axes titled: {c['xlabel']!r} / {c['ylabel']!r}")
            check([label.split(" (")[0] for label in c["labels"]] == ["one-large", "several-small"]
                  and all(" x " in label for label in c["labels"]),
                  f"synthetic: {cid} bars named by phase and arrangement: {c['labels']}")
        check('<section id="verdict">' in html and (" wins, " in html or " win, " in html), "synthetic: the verdict opens the page")
        roof = charts["roofline"]
        roofs = [s for s in roof["series"] if s["label"].startswith("roof: ")]
        points = [s for s in roof["series"] if not s["label"].startswith("roof: ")]
        check(len(points) == 9, f"synthetic: 9 roofline points (finished + failed jobs), got {len(points)}")
        h100 = [s for s in roofs if "H100 fp32" in s["label"]]
        check(h100 and abs(max(h100[0]["y"]) - 67e12) < 1e9, f"synthetic: H100 fp32 roof at 67 TFLOP/s: {h100}")
        cpu = [s for s in roofs if s["label"].startswith("roof: CPU 1 core")]
        check(cpu and abs(max(cpu[0]["y"]) - p["gemm_gflops_1t"] * 1e9) < 1e3 * p["gemm_gflops_1t"],
              f"synthetic: CPU 1-core roof from the probe: {cpu}")
        gpu_pt = [s for s in points if s["label"].startswith("gpu")]
        check(gpu_pt and abs(gpu_pt[0]["x"][0] - 5.0) < 1e-9 and abs(gpu_pt[0]["y"][0] - 1e9) < 1,
              f"synthetic: GPU point at (2e5/4e4 = 5 FLOP/B, 1e9 FLOP/s): {gpu_pt[:1]}")
        ops = [c for c in data["charts"] if c["id"].startswith("ops-gpu")]
        check(len(ops) == 2 and ops[0]["labels"][0].startswith("aten::addmm"),
              f"synthetic: operator charts sorted by self device time: {[c['labels'][:1] for c in ops]}")
        check("<h3>Scaling over ranks</h3>" in html and "<h3>Roofline</h3>" in html,
              "synthetic: tables in the page")
        # --peak-tflops replaces the table peak.
        r = run([args.gridrun, "report", syn, "--html", html_path, "--peak-tflops", "100"])
        data = embedded_data(open(html_path, encoding="utf-8").read())
        labels = [s["label"] for c in data["charts"] if c["id"] == "roofline" for s in c["series"]]
        check(r.returncode == 0 and "roof: --peak-tflops 100 (H100 memory)" in labels,
              f"--peak-tflops 100: roofs {labels[:4]}")
        # Filters apply to charts as to tables.
        r = run([args.gridrun, "report", syn, "--html", html_path, "--filter", "device=gpu"])
        data = embedded_data(open(html_path, encoding="utf-8").read())
        loss = [c for c in data["charts"] if c["id"] == "loss"][0]
        check(r.returncode == 0 and len(loss["series"]) == 2, f"--filter device=gpu: {len(loss['series'])} loss series")

        # --- real run with the real trainer ---
        if args.train and os.path.exists(args.train) and args.grid:
            runs = os.path.join(tmp, "runs")
            # The utilization chart needs at least one sample per job. At the default 10 Hz a job
            # shorter than 0.1 s (the quickstart on a fast machine) has none, so the real trainer
            # runs behind a wrapper that samples at the highest rate it accepts.
            train = os.path.join(tmp, "gridrun-train-1khz")
            with open(train, "w") as f:
                f.write('#!/bin/sh\nexec "%s" "$@" --util-hz 1000\n' % os.path.abspath(args.train))
            os.chmod(train, 0o755)
            # No limit of its own: ctest's TIMEOUT bounds a hang. The run takes seconds in a
            # Release build and minutes under ASan (230 s alone, over 600 s beside the Slurm
            # scenarios), so any limit here would make the outcome depend on machine speed.
            # What the charts below need is four jobs of two models on 1 and 2 ranks with a few
            # logged steps each, not the example's 4 epochs of Fashion-MNIST (70 s of the test's
            # 90): one epoch of 2,048 samples (32 steps at global batch 64) and 512 test samples.
            small = ["--set", "epochs=1", "--set", "train_samples=2048", "--set", "test_samples=512"]
            r = run([args.gridrun, "run", args.grid, "--out", runs, "--train-bin", train, "--no-report", *small])
            check(r.returncode == 0, f"gridrun run quickstart: exit {r.returncode}: {r.stderr[-800:]}")
            rundir = os.path.join(runs, "quickstart")
            # Before the probe there are no CPU roofs: the roofline holds only the four jobs' points,
            # all between 13 and 23 FLOP/byte (the axes must still be labelled and a decade wide).
            html_path = os.path.join(tmp, "quickstart-noroofs.html")
            r = run([args.gridrun, "report", rundir, "--html", html_path])
            check(r.returncode == 0, f"report --html (quickstart, no probe): {r.stderr}")
            html = check_page(args, tmp, "quickstart-noroofs", html_path, min_charts=4, expect_axes=(2, 1))
            roof = {c["id"]: c for c in embedded_data(html)["charts"]}["roofline"]
            xs = [s["x"][0] for s in roof["series"]]
            check(not roof["note"] and len(xs) == 4 and max(xs) / min(xs) < 10,
                  f"quickstart-noroofs: 4 roofline points within a decade, no roofs: {xs}")
            r = run([args.gridrun, "probe", "--seconds", "0.4", "--out", os.path.join(rundir, "probe.json")])
            check(r.returncode == 0, f"probe into the run dir: {r.stderr}")
            html_path = os.path.join(tmp, "quickstart.html")
            r = run([args.gridrun, "report", rundir, "--html", html_path])
            check(r.returncode == 0, f"report --html (quickstart): {r.stderr}")
            html = check_page(args, tmp, "quickstart", html_path, min_charts=4, expect_axes=(2, 1))
            data = embedded_data(html)
            charts = {c["id"]: c for c in data["charts"]}
            # A CPU run: the GPU power chart is left out, and a line at the top says so.
            lines = re.findall(r'<p class="not-shown" data-ids="([^"]*)">(.*?)</p>', html, re.S)
            power = [text for ids, text in lines if "power" in ids.split()]
            check(len(power) == 1 and "GPU power" in power[0] and "not shown" in power[0],
                  f"quickstart: one not-shown line for the GPU power chart: {lines}")
            loss = charts["loss"]
            check(not loss["note"] and len(loss["series"]) == 4, "quickstart: 4 loss curves")
            check(not charts["scaling"]["note"], "quickstart: throughput vs ranks drawn (1 vs 2 ranks)")
            check(not charts["util"]["note"], "quickstart: utilization timeline drawn")
            check(charts["power"]["note"] != "", "quickstart: CPU-only run: power chart is a note")
        else:
            print("real run skipped: no gridrun-train given (synthetic run only)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    if FAILED:
        print(f"{len(FAILED)} check(s) failed")
        return 1
    print("all checks passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
