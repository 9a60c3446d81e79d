#!/usr/bin/python3
"""Export the example models of examples/own-model*.yaml as TorchScript archives.

Writes, with RANDOM weights (seed 0; nothing is ever downloaded):

  convnext_t.pt  torchvision.models.convnext_tiny(num_classes=CLASSES), input [N, 3, S, S] float32
  vit_b_16.pt    torchvision.models.vit_b_16(image_size=S, num_classes=CLASSES), same input
  bert_base.pt   a BERT-base-sized classifier built from torch.nn only (bert_base.py), input [N, L]
                 int64 token ids

Every file is compiled with torch.jit.script (falling back to torch.jit.trace, with a note, when
scripting fails), saved with torch.jit.save, loaded back with torch.jit.load and run on a batch of
2 inputs of the right kind; the output must be [2, CLASSES]. This is the contract of
`model: torchscript` in a gridrun grid (docs/own-model.md): forward takes ONE tensor and returns
logits [N, classes].

The two torchvision models need torchvision (Debian 12: apt install python3-torchvision, for
/usr/bin/python3's torch 1.13); bert_base needs torch only. A model that cannot be exported is
reported on stderr and the others are still written; the exit status is then 1.

Which torch to export with: a TorchScript file can use operators that an older LibTorch does not
have, so export with the torch whose LibTorch gridrun was built on (Debian's build:
/usr/bin/python3, torch 1.13), or an older one.

  python3 examples/models/export_models.py                    # all three into examples/models/
  python3 examples/models/export_models.py --which bert_base --out /tmp/m
  python3 examples/models/export_models.py --bench-steps 3    # also time forward+backward, batch 2
"""
import argparse
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time

MODELS = ("convnext_t", "vit_b_16", "bert_base")
HERE = os.path.dirname(os.path.abspath(__file__))


class ExportError(Exception):
    """A model that cannot be built or exported; the message is printed as it is."""


def parse_args(argv):
    p = argparse.ArgumentParser(
        description="Export ConvNeXt-T, ViT-B/16 and a BERT-base-sized classifier with random "
        "weights (seed 0) as TorchScript files for gridrun's `model: torchscript` "
        "(examples/own-model*.yaml, docs/own-model.md). Nothing is downloaded.",
        epilog="Exit status: 0 all requested files written and checked, 1 one or more failed "
        "(the others are still written), 2 bad arguments.")
    p.add_argument("--out", default=HERE, metavar="DIR",
                   help="folder to write NAME.pt into (created if missing; default: this script's "
                   "folder, %(default)s)")
    p.add_argument("--which", default=",".join(MODELS), metavar="LIST",
                   help="comma-separated models to export, from %s (default: all)"
                   % ", ".join(MODELS))
    p.add_argument("--image-size", type=int, default=32, metavar="S",
                   help="image side S of the [N, 3, S, S] input of convnext_t and vit_b_16 "
                   "(default 32, gridrun's synthetic and CIFAR images; vit_b_16: a multiple of 16; "
                   "convnext_t: at least 32)")
    p.add_argument("--classes", type=int, default=10,
                   help="output classes (default 10, gridrun's synthetic and CIFAR-10 sets)")
    p.add_argument("--vocab", type=int, default=257,
                   help="bert_base vocabulary size, token 0 = padding (default 257: gridrun's "
                   "synthetic tokens and byte-level text tokenizer)")
    p.add_argument("--max-positions", type=int, default=512,
                   help="bert_base learned position embeddings: the longest input it accepts "
                   "(default 512)")
    p.add_argument("--seq-len", type=int, default=64,
                   help="token sequence length L used to check bert_base (default 64, gridrun's "
                   "synthetic token set; its text set uses 128)")
    p.add_argument("--pool", choices=("mean", "first"), default="mean",
                   help="bert_base pooling: mean over non-padding tokens (default) or the first "
                   "token's output")
    p.add_argument("--bench-steps", type=int, default=0, metavar="N",
                   help="after the check, time N forward+backward passes of batch 2 of the loaded "
                   "file (after one untimed pass) and print the median (default 0: off)")
    p.add_argument("--threads", type=int, default=0,
                   help="torch.set_num_threads for the check and --bench-steps (default 0: leave "
                   "torch's default)")
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args(argv)
    which = [w.strip() for w in a.which.split(",") if w.strip()]
    unknown = [w for w in which if w not in MODELS]
    if unknown or not which:
        p.error("--which: unknown model(s) %s; choose from %s" % (", ".join(unknown) or "(none)",
                                                                   ", ".join(MODELS)))
    a.which = [m for m in MODELS if m in which]  # file order, no duplicates
    if a.classes < 1:
        p.error("--classes must be >= 1")
    if a.vocab < 2:
        p.error("--vocab must be >= 2 (token 0 is padding)")
    if not 1 <= a.seq_len <= a.max_positions:
        p.error("--seq-len must be in [1, --max-positions]")
    if "vit_b_16" in a.which and (a.image_size < 16 or a.image_size % 16):
        p.error("--image-size %d: vit_b_16 needs a positive multiple of 16 (16x16 patches)"
                % a.image_size)
    if "convnext_t" in a.which and a.image_size < 32:
        p.error("--image-size %d: convnext_t needs at least 32 (it downsamples 32x)" % a.image_size)
    if a.bench_steps < 0 or a.threads < 0:
        p.error("--bench-steps and --threads must be >= 0")
    return a


def import_torchvision(name):
    try:
        import torchvision  # noqa: F401  (only the two image models need it)
        import torchvision.models
    except ImportError as e:
        raise ExportError(
            "%s: needs torchvision, which this Python (%s) cannot import (%s). Install the "
            "torchvision that matches its torch (Debian 12: apt install python3-torchvision for "
            "/usr/bin/python3), or export only bert_base: --which bert_base"
            % (name, sys.executable, e)) from None
    return torchvision


def tv_build(fn, **kwargs):
    # torchvision >= 0.13 takes weights=None (no download); 0.12 had pretrained=False.
    try:
        return fn(weights=None, **kwargs)
    except TypeError:
        return fn(pretrained=False, **kwargs)


def build_convnext_t(a):
    tv = import_torchvision("convnext_t")
    if not hasattr(tv.models, "convnext_tiny"):
        raise ExportError("convnext_t: torchvision %s has no convnext_tiny (needs >= 0.12)"
                          % tv.__version__)
    return tv_build(tv.models.convnext_tiny, num_classes=a.classes)


def build_vit_b_16(a):
    tv = import_torchvision("vit_b_16")
    if not hasattr(tv.models, "vit_b_16"):
        raise ExportError("vit_b_16: torchvision %s has no vit_b_16 (needs >= 0.12)"
                          % tv.__version__)
    return tv_build(tv.models.vit_b_16, image_size=a.image_size, num_classes=a.classes)


# The name bert_base.py is compiled under: TorchScript stores each scripted class's source text
# and file name in the archive (its debug information), so compiling it from its absolute path
# would make the file's bytes, and so its SHA-256, depend on where the checkout is.
BERT_SOURCE_NAME = "examples/models/bert_base.py"


def build_bert_base(a):
    import linecache
    with open(os.path.join(HERE, "bert_base.py")) as f:
        src = f.read()
    # inspect (and so torch.jit.script) finds the source of a name that is not a file in linecache.
    linecache.cache[BERT_SOURCE_NAME] = (len(src), None, src.splitlines(True), BERT_SOURCE_NAME)
    ns = {"__name__": "bert_base", "__file__": BERT_SOURCE_NAME}
    exec(compile(src, BERT_SOURCE_NAME, "exec"), ns)
    return ns["BertClassifier"](a.vocab, a.classes, a.max_positions, a.pool)


BUILD = {"convnext_t": build_convnext_t, "vit_b_16": build_vit_b_16, "bert_base": build_bert_base}


def example_input(name, a, batch=2):
    import torch
    g = torch.Generator().manual_seed(1)
    if name == "bert_base":
        x = torch.randint(1, a.vocab, (batch, a.seq_len), generator=g, dtype=torch.int64)
        if batch > 1 and a.seq_len > 1:
            x[1, a.seq_len // 2:] = 0  # exercise the padding mask
        return x
    return torch.randn(batch, 3, a.image_size, a.image_size, generator=g)


def compile_model(name, model, x):
    import warnings
    import torch
    # torch 1.13 warns that TransformerEncoder lists 'batch_first' as a constant it never sets.
    warnings.filterwarnings("ignore", message=".*was found in ScriptModule constants")
    try:
        return torch.jit.script(model), "script"
    except Exception as e:  # noqa: BLE001  (any scripting failure: fall back to tracing)
        first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
        print("note: %s: torch.jit.script failed (%s); falling back to torch.jit.trace, which "
              "records one path through forward with the training flag of trace time "
              "(dropout and normalisation stay as traced)" % (name, first), file=sys.stderr)
        return torch.jit.trace(model, (x,), check_trace=False), "trace"


def check_file(name, path, a):
    import torch
    m = torch.jit.load(path, map_location="cpu")
    x = example_input(name, a)
    m.train()
    y = m(x)
    if tuple(y.shape) != (2, a.classes):
        raise ExportError("%s: %s returned shape %s for input %s, expected [2, %d]"
                          % (name, path, list(y.shape), list(x.shape), a.classes))
    if y.dtype != torch.float32 or not bool(torch.isfinite(y).all()):
        raise ExportError("%s: %s returned %s logits with non-finite values or not float32"
                          % (name, path, y.dtype))
    y.sum().backward()  # the training path works, too
    m.eval()
    with torch.no_grad():
        ye = m(x)
    if tuple(ye.shape) != (2, a.classes):
        raise ExportError("%s: eval-mode output shape %s, expected [2, %d]"
                          % (name, list(ye.shape), a.classes))
    return m


def bench(m, name, a):
    import torch
    x = example_input(name, a)
    m.train()
    times = []
    for i in range(a.bench_steps + 1):
        for p in m.parameters():
            p.grad = None
        t = time.perf_counter()
        loss = torch.nn.functional.cross_entropy(m(x), torch.tensor([0, 1]) % a.classes)
        loss.backward()
        if i:
            times.append(time.perf_counter() - t)
    times.sort()
    return times[len(times) // 2]


def sha256(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def export(name, a):
    import torch
    t0 = time.perf_counter()
    torch.manual_seed(0)  # the same weights whichever models are exported together
    model = BUILD[name](a)
    params = sum(p.numel() for p in model.parameters())
    model.train()
    how_model, how = compile_model(name, model, example_input(name, a))
    path = os.path.join(a.out, name + ".pt")
    # Saved under its final name in a temporary folder (the archive's inner folder is named after
    # the file), then renamed: a half-written or unchecked file never has the final name.
    tmpdir = tempfile.mkdtemp(prefix=".export-", dir=a.out)
    tmp = os.path.join(tmpdir, name + ".pt")
    try:
        torch.jit.save(how_model, tmp)
        loaded = check_file(name, tmp, a)
        os.replace(tmp, path)
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    seconds = time.perf_counter() - t0
    step = bench(loaded, name, a) if a.bench_steps else None
    return path, params, how, seconds, step


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    a = parse_args(argv)
    if os.environ.get("PYTHONHASHSEED") != "0":
        # TorchScript writes a module's constants in Python's set order, which changes with the
        # string-hash seed of every run; with a fixed seed the same torch and the same options
        # give the same bytes, so the same SHA-256 (gridrun's model_sha256).
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable, os.path.abspath(__file__)] + argv)
    import warnings
    # torch 2.x marks torch.jit.script/save/load deprecated (FutureWarning); they still work, and
    # TorchScript is what gridrun-train loads.
    warnings.filterwarnings("ignore", message=r".*torch\.jit\.\w+` is deprecated",
                            category=FutureWarning)
    try:
        import torch
    except ImportError as e:
        print("export_models.py: this Python (%s) cannot import torch (%s). Debian 12: apt install "
              "python3-torch python3-torchvision and run it with /usr/bin/python3; or use a Python "
              "that has torch (and torchvision for convnext_t and vit_b_16)" % (sys.executable, e),
              file=sys.stderr)
        return 1
    if a.threads:
        torch.set_num_threads(a.threads)
    os.makedirs(a.out, exist_ok=True)
    if not a.child:
        print("torch %s, %d thread(s), out %s" % (torch.__version__, torch.get_num_threads(),
                                                   os.path.abspath(a.out)), flush=True)
        if len(a.which) > 1:
            # One process per model: TorchScript numbers the classes it compiles per process
            # (___torch_mangle_N), so a file would depend on which models were exported before it.
            failed = 0
            for name in a.which:
                rc = subprocess.call([sys.executable, os.path.abspath(__file__)] + argv
                                     + ["--which", name, "--child"])
                failed += rc != 0
            return 1 if failed else 0
    failed = 0
    for name in a.which:
        try:
            path, params, how, seconds, step = export(name, a)
        except ExportError as e:
            print("FAILED %s" % e, file=sys.stderr)
            failed += 1
            continue
        except Exception as e:  # noqa: BLE001  (report, go on with the next model)
            print("FAILED %s: %s: %s" % (name, type(e).__name__, e), file=sys.stderr)
            failed += 1
            continue
        line = "%-13s %11s params  %8.1f MB  %6.1f s  %s  sha256 %s" % (
            os.path.basename(path), format(params, ","), os.path.getsize(path) / 1e6, seconds,
            how, sha256(path)[:16])
        if step is not None:
            line += "  fwd+bwd batch 2: %.3f s" % step
        print(line, flush=True)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
