#!/usr/bin/python3
"""A user's own model and data, made in the test: TorchScript archives and HDF5 data sets (issue 33).

    own_files.py OUT_DIR        writes every file below into OUT_DIR and prints one line per file

Everything is made with fixed seeds (torch.manual_seed, numpy default_rng), so two calls give the
same weights and the same samples. The module is also imported by own_model.py (scenarios) and
torch_equal.py (--torchscript) for the models, make_all() and job_json().

Good files
  cnn.pt               scripted CNN, 3x16x16 images, 4 classes, with BatchNorm (names features.N.*,
                       classifier.*)
  cnn_plain.pt         the same CNN without BatchNorm (2 ranks x b == 1 rank x 2b needs a model whose
                       per-sample output does not depend on the rest of the batch)
  tiny_transformer.pt  scripted: embedding + learned positions + 2-layer nn.TransformerEncoder
                       (d=32, 4 heads, FF 64, dropout 0, batch_first) + mean pool + linear;
                       tokens int64 [N,16], vocab 50, 4 classes
  images.h5            uint8 /train/x [512,3,16,16] (chunked), /test/x [128,...]; int64 labels;
                       root attrs classes=4, mean/std per channel (float32, pixels in [0,1])
  images_f32.h5        the same pixels already normalised, float32, all 640 samples in /train and no
                       /test group (the last tenth is held out); no mean/std (defaults 0 and 1)
  tokens.h5            int64 /train/x [512,16] (gzip), /test/x [128,16]; int32 labels; vocab=50,
                       classes=4; class c owns tokens 1+12c .. 12+12c and dominates the sequence
Bad files (each must be exit 2 with one line naming the file)
  not_archive.pt, truncated.pt (cnn.pt cut in half), bitflip.pt (one byte of the largest tensor
  record flipped), wrong_input.pt (needs 1 channel, the data has 3), wrong_output.pt ([N,4,2]),
  wrong_output_1d.pt ([N]), wrong_classes.pt ([N,3] for a 4-class set), two_inputs.pt
  (forward(x, y)), missing_group.h5 (no /train/y), wrong_dtype.h5 (float64 x),
  wrong_label_dtype.h5 (float32 labels), string_x.h5 (x is strings), labels_out_of_range.h5 (a
  label == classes), truncated.h5 (images.h5 cut in half), tokens_no_vocab.h5 (tokens.h5 without
  the required `vocab` attribute)
"""
import argparse
import hashlib
import json
import os
import struct
import sys
import warnings
import zipfile

import h5py
import numpy as np
import torch
from torch import nn

CLASSES = 4
CHANNELS, SIDE = 3, 16
N_TRAIN, N_TEST = 512, 128
VOCAB, SEQ = 50, 16
MODEL_SEED, DATA_SEED = 1234, 20260101
# torch 1.13 scripting nn.TransformerEncoderLayer: "'batch_first' was found in ScriptModule constants"
warnings.filterwarnings("ignore", message=".*found in ScriptModule constants.*")
# torch 2.x: "`torch.jit.script` is deprecated" (TorchScript is what gridrun-train loads)
warnings.filterwarnings("ignore", message=r".*torch\.jit\.\w+` is deprecated.*", category=FutureWarning)


# --- models (module level: torch.jit.script reads their source) -------------------------------------

class SmallCNN(nn.Module):
    """conv3x3(8) [BN] ReLU, conv3x3/2(16) [BN] ReLU, global average pool, linear. No max-pool: its
    discrete choices would amplify fp32 summation-order noise between 1 and 2 ranks."""

    def __init__(self, in_ch: int = CHANNELS, classes: int = CLASSES, bn: bool = True):
        super().__init__()
        layers = [nn.Conv2d(in_ch, 8, 3, padding=1, bias=not bn)]
        if bn:
            layers.append(nn.BatchNorm2d(8))
        layers += [nn.ReLU(), nn.Conv2d(8, 16, 3, stride=2, padding=1, bias=not bn)]
        if bn:
            layers.append(nn.BatchNorm2d(16))
        layers += [nn.ReLU(), nn.AdaptiveAvgPool2d(1), nn.Flatten()]
        self.features = nn.Sequential(*layers)
        self.classifier = nn.Linear(16, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.classifier(self.features(x))


class TinyTransformer(nn.Module):
    def __init__(self, vocab: int = VOCAB, seq: int = SEQ, d: int = 32, classes: int = CLASSES):
        super().__init__()
        self.embed = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.randn(1, seq, d) * 0.02)
        layer = nn.TransformerEncoderLayer(d, 4, 2 * d, dropout=0.0, batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, 2, enable_nested_tensor=False)
        self.head = nn.Linear(d, classes)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.encoder(self.embed(x) + self.pos)
        return self.head(h.mean(1))


class WrongOutput(nn.Module):
    """Logits [N, classes, 2]."""

    def __init__(self):
        super().__init__()
        self.net = SmallCNN()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.net(x)
        return torch.stack([y, y], 2)


class WrongOutput1d(nn.Module):
    """Logits [N]."""

    def __init__(self):
        super().__init__()
        self.net = SmallCNN()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.net(x).sum(1)


class TwoInputs(nn.Module):
    def __init__(self):
        super().__init__()
        self.net = SmallCNN()

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return self.net(x) + y.mean()


def script_and_save(module, path):
    module.train()
    m = torch.jit.script(module)
    torch.jit.save(m, path)
    return m


def cnn(in_ch=CHANNELS, classes=CLASSES, bn=True, seed=MODEL_SEED):
    torch.manual_seed(seed)
    return SmallCNN(in_ch, classes, bn)


def tiny_transformer(seed=MODEL_SEED):
    torch.manual_seed(seed)
    return TinyTransformer()


def analytic_flops(name):
    """Forward FLOPs per sample (one multiply-add = 2) of the FLOP-counted layers, as docs/runner.md
    counts the built-in models: convolutions, linear layers, attention matrix products."""
    if name in ("cnn", "cnn_plain"):
        conv1 = 2 * 8 * SIDE * SIDE * CHANNELS * 9
        conv2 = 2 * 16 * (SIDE // 2) ** 2 * 8 * 9
        return conv1 + conv2 + 2 * 16 * CLASSES
    if name == "tiny_transformer":
        d, ff, L = 32, 64, SEQ
        per_layer = 2 * L * d * 3 * d + 2 * 2 * L * L * d + 2 * L * d * d + 2 * 2 * L * d * ff
        return 2 * per_layer + 2 * d * CLASSES
    raise KeyError(name)


# --- data ------------------------------------------------------------------------------------------

def image_set(rng, n):
    """Class c raises the mean brightness of channel c (class 3: none), plus a per-sample offset
    and pixel noise: separable by the channel means (a linear function of the input)."""
    y = rng.integers(0, CLASSES, n)
    levels = np.full((CLASSES, CHANNELS), 90.0)
    for c in range(CHANNELS):
        levels[c, c] = 150.0
    base = levels[y][:, :, None, None] + rng.normal(0, 8, (n, CHANNELS, 1, 1))
    x = base + rng.normal(0, 40, (n, CHANNELS, SIDE, SIDE))
    return np.clip(np.rint(x), 0, 255).astype(np.uint8), y.astype(np.int64)


def token_set(rng, n):
    """Class c owns tokens 1+12c .. 12+12c; each position is one of them with probability 0.35, else
    uniform over 1..48 (all classes' tokens), so the class's range dominates every sequence."""
    y = rng.integers(0, CLASSES, n)
    noise = rng.integers(1, 1 + 12 * CLASSES, (n, SEQ))
    own = 1 + 12 * y[:, None] + rng.integers(0, 12, (n, SEQ))
    x = np.where(rng.random((n, SEQ)) < 0.35, own, noise)
    return x.astype(np.int64), y.astype(np.int32)


def channel_stats(x_u8):
    v = x_u8.astype(np.float64) / 255.0
    return (v.mean(axis=(0, 2, 3)).astype(np.float32), v.std(axis=(0, 2, 3)).astype(np.float32))


def write_h5(path, train, test=None, attrs=None, chunks=None, compression=None):
    with h5py.File(path, "w") as f:
        for split, xy in (("train", train), ("test", test)):
            if xy is None:
                continue
            g = f.create_group(split)
            x, y = xy
            if x is not None:
                kw = {}
                if chunks is not None and x.dtype != object:
                    kw["chunks"] = (min(chunks, len(x)),) + x.shape[1:]
                    if compression:
                        kw["compression"] = compression
                g.create_dataset("x", data=x, **kw)
            if y is not None:
                g.create_dataset("y", data=y)
        for k, v in (attrs or {}).items():
            f.attrs[k] = v


# --- damaged archives ------------------------------------------------------------------------------

def largest_tensor_record(path):
    """(name, offset of its data in the file, size) of the largest stored `*/data/N` record."""
    with zipfile.ZipFile(path) as z:
        recs = [i for i in z.infolist() if "/data/" in i.filename and i.compress_type == 0]
    rec = max(recs, key=lambda i: i.file_size)
    with open(path, "rb") as f:
        f.seek(rec.header_offset)
        hdr = f.read(30)
    assert hdr[:4] == b"PK\x03\x04", path
    name_len, extra_len = struct.unpack("<HH", hdr[26:30])
    return rec.filename, rec.header_offset + 30 + name_len + extra_len, rec.file_size


def flip_byte(src, dst):
    data = bytearray(open(src, "rb").read())
    name, off, size = largest_tensor_record(src)
    pos = off + size // 2
    data[pos] ^= 0x40
    with open(dst, "wb") as f:
        f.write(bytes(data))
    return name, pos


def truncate_copy(src, dst):
    data = open(src, "rb").read()
    with open(dst, "wb") as f:
        f.write(data[:len(data) // 2])


# --- everything ------------------------------------------------------------------------------------

GOOD_MODELS = ("cnn.pt", "cnn_plain.pt", "tiny_transformer.pt")
GOOD_DATA = ("images.h5", "images_f32.h5", "tokens.h5")
BAD_MODELS = ("not_archive.pt", "truncated.pt", "bitflip.pt", "wrong_input.pt", "wrong_output.pt",
              "wrong_output_1d.pt", "wrong_classes.pt", "two_inputs.pt")
BAD_DATA = ("missing_group.h5", "wrong_dtype.h5", "wrong_label_dtype.h5", "string_x.h5",
            "labels_out_of_range.h5", "truncated.h5")
BAD_TOKEN_DATA = ("tokens_no_vocab.h5",)


def make_all(out):
    """Writes every file into `out`; returns {file name: absolute path}."""
    out = os.path.abspath(out)
    os.makedirs(out, exist_ok=True)
    p = lambda name: os.path.join(out, name)

    script_and_save(cnn(), p("cnn.pt"))
    script_and_save(cnn(bn=False), p("cnn_plain.pt"))
    script_and_save(tiny_transformer(), p("tiny_transformer.pt"))
    script_and_save(cnn(in_ch=1), p("wrong_input.pt"))
    torch.manual_seed(MODEL_SEED)
    script_and_save(WrongOutput(), p("wrong_output.pt"))
    torch.manual_seed(MODEL_SEED)
    script_and_save(WrongOutput1d(), p("wrong_output_1d.pt"))
    script_and_save(cnn(classes=CLASSES - 1), p("wrong_classes.pt"))
    torch.manual_seed(MODEL_SEED)
    script_and_save(TwoInputs(), p("two_inputs.pt"))
    with open(p("not_archive.pt"), "w") as f:
        f.write("this is a text file, not a TorchScript archive\n")
    truncate_copy(p("cnn.pt"), p("truncated.pt"))
    flip_byte(p("cnn.pt"), p("bitflip.pt"))

    rng = np.random.default_rng(DATA_SEED)
    xtr, ytr = image_set(rng, N_TRAIN)
    xte, yte = image_set(rng, N_TEST)
    mean, std = channel_stats(xtr)
    img_attrs = {"classes": np.int64(CLASSES), "mean": mean, "std": std}
    write_h5(p("images.h5"), (xtr, ytr), (xte, yte), img_attrs, chunks=64)
    x_all = np.concatenate([xtr, xte])
    xf = ((x_all.astype(np.float32) / np.float32(255.0) - mean[None, :, None, None])
          / std[None, :, None, None]).astype(np.float32)
    write_h5(p("images_f32.h5"), (xf, np.concatenate([ytr, yte])), None,
             {"classes": np.int64(CLASSES)})

    rng = np.random.default_rng(DATA_SEED + 1)
    ttr, tytr = token_set(rng, N_TRAIN)
    tte, tyte = token_set(rng, N_TEST)
    write_h5(p("tokens.h5"), (ttr, tytr), (tte, tyte),
             {"classes": np.int64(CLASSES), "vocab": np.int64(VOCAB)}, chunks=128,
             compression="gzip")

    write_h5(p("missing_group.h5"), (xtr, None), (xte, yte), img_attrs)
    write_h5(p("wrong_dtype.h5"), (xtr.astype(np.float64) / 255.0, ytr), (xte.astype(np.float64) / 255.0, yte),
             img_attrs)
    write_h5(p("wrong_label_dtype.h5"), (xtr, ytr.astype(np.float32)), (xte, yte.astype(np.float32)),
             img_attrs)
    strings = np.array([b"sample %d" % i for i in range(N_TRAIN)], dtype=object)
    with h5py.File(p("string_x.h5"), "w") as f:
        f.create_dataset("train/x", data=strings, dtype=h5py.string_dtype())
        f.create_dataset("train/y", data=ytr)
        for k, v in img_attrs.items():
            f.attrs[k] = v
    bad_y = ytr.copy()
    bad_y[N_TRAIN // 2] = CLASSES
    write_h5(p("labels_out_of_range.h5"), (xtr, bad_y), (xte, yte), img_attrs)
    truncate_copy(p("images.h5"), p("truncated.h5"))
    write_h5(p("tokens_no_vocab.h5"), (ttr, tytr), (tte, tyte), {"classes": np.int64(CLASSES)})

    names = GOOD_MODELS + GOOD_DATA + BAD_MODELS + BAD_DATA + BAD_TOKEN_DATA
    files = {n: p(n) for n in names}
    missing = [n for n, f in files.items() if not os.path.isfile(f)]
    assert not missing, missing
    return files


def sha256(path):
    with open(path, "rb") as f:
        return hashlib.file_digest(f, "sha256").hexdigest()


def job_json(path, params, job_id=None, run="own_model", index=0, meta=None):
    """Writes a gridrun-train job file (the planner's format: id, run, index, params, meta) and
    returns its id. `params` are job parameters by their grid names; parameters not given take their
    defaults in gridrun-train. For model=torchscript, model_sha256 is filled with the file's SHA-256
    unless given (give a wrong one to test the refusal). global_batch is set to batch_per_rank x
    ranks when not given. The id defaults to the first 12 hex digits of the SHA-256 of the canonical
    params, so different params (another file, another hash) are different jobs."""
    params = dict(params)
    if params.get("model") == "torchscript" and "model_sha256" not in params:
        params["model_sha256"] = sha256(params["model_file"])
    if "batch_per_rank" in params and "global_batch" not in params:
        params["global_batch"] = int(params["batch_per_rank"]) * int(params.get("ranks", 1))
    for k in ("model_file", "data_file"):
        if k in params and not os.path.isabs(params[k]):
            raise ValueError(f"{k} must be an absolute path in a job file: {params[k]}")
    if job_id is None:
        canon = json.dumps(params, sort_keys=True, separators=(",", ":"))
        job_id = hashlib.sha256(canon.encode()).hexdigest()[:12]
    job = {"id": job_id, "run": run, "index": index, "params": params, "meta": meta or {}}
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w") as f:
        json.dump(job, f, indent=1, sort_keys=True)
    return job_id


def check_good_models(files):
    """The good models load and give [2, classes] on a batch of their data; the bad output models
    give what they are meant to get wrong. Returns a list of lines."""
    lines = []
    with h5py.File(files["images.h5"], "r") as f:
        x = torch.from_numpy(f["train/x"][:2].astype(np.float32) / 255.0)
    with h5py.File(files["tokens.h5"], "r") as f:
        t = torch.from_numpy(f["train/x"][:2])
    for name, inp in (("cnn.pt", x), ("cnn_plain.pt", x), ("tiny_transformer.pt", t)):
        m = torch.jit.load(files[name])
        for mode in ("train", "eval"):
            getattr(m, mode)()
            with torch.no_grad():
                y = m(inp)
            assert tuple(y.shape) == (2, CLASSES), (name, mode, tuple(y.shape))
        n = sum(p.numel() for p in m.parameters())
        lines.append(f"{name}: output {tuple(y.shape)}, {n} parameters, "
                     f"first {next(iter(m.state_dict()))}")
    for name, shape in (("wrong_output.pt", (2, CLASSES, 2)), ("wrong_output_1d.pt", (2,)),
                        ("wrong_classes.pt", (2, CLASSES - 1))):
        with torch.no_grad():
            y = torch.jit.load(files[name])(x)
        assert tuple(y.shape) == shape, (name, tuple(y.shape))
    try:
        torch.jit.load(files["wrong_input.pt"])(x)
        raise AssertionError("wrong_input.pt accepted a 3-channel batch")
    except RuntimeError:
        pass
    return lines


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out")
    ap.add_argument("--check", action="store_true",
                    help="also load the good models and check their output shapes")
    args = ap.parse_args()
    files = make_all(args.out)
    for name, path in files.items():
        print(f"{path} {os.path.getsize(path)} bytes")
    if args.check:
        for line in check_good_models(files):
            print(line)
    return 0


if __name__ == "__main__":
    # TorchScript writes a module's constants in set order, which follows Python's string hashing:
    # with a fixed PYTHONHASHSEED the archives are byte-identical from run to run (weights and data
    # are fixed by the seeds either way).
    if os.environ.get("PYTHONHASHSEED") != "0":
        os.environ["PYTHONHASHSEED"] = "0"
        os.execv(sys.executable, [sys.executable] + sys.argv)
    sys.exit(main())
