"""The BERT-base-sized text classifier of bert_base.pt, from torch.nn modules only.

export_models.py compiles this file under the fixed name examples/models/bert_base.py (TorchScript
keeps a model's source text and file name in the archive), so the exported file does not depend on
where the repository is checked out; editing this file changes bert_base.pt's SHA-256, and with it
the job ids of grids that use it.
"""
import inspect

import torch
from torch import nn


class BertClassifier(nn.Module):
    """token embedding (padding_idx 0) + learned position embedding (sliced to the input length)
    -> LayerNorm -> dropout -> 12 post-norm encoder layers (d 768, 12 heads, FF 3072, GELU,
    dropout 0.1) -> mean over non-padding tokens (or the first token) -> Linear(768, classes).

    forward(x: int64 [N, L]) -> logits [N, classes]. Padding (token 0) is masked in attention; a
    row of padding only attends to all of its positions (no NaN).
    """

    def __init__(self, vocab=257, classes=10, max_positions=512, pool="mean", d_model=768, heads=12,
                 layers=12, ff=3072, dropout=0.1):
        super().__init__()
        self.tok = nn.Embedding(vocab, d_model, padding_idx=0)
        self.pos = nn.Parameter(torch.zeros(1, max_positions, d_model))
        self.norm = nn.LayerNorm(d_model, eps=1e-12)
        self.drop = nn.Dropout(dropout)
        layer = nn.TransformerEncoderLayer(d_model, heads, ff, dropout, activation="gelu",
                                           batch_first=True)
        kw = {}
        if "enable_nested_tensor" in inspect.signature(nn.TransformerEncoder).parameters:
            kw["enable_nested_tensor"] = False  # an inference fast path; avoids torch 2.x's warning
        self.encoder = nn.TransformerEncoder(layer, layers, **kw)
        self.head = nn.Linear(d_model, classes)
        self.mean_pool = pool == "mean"
        self.max_positions = max_positions
        nn.init.normal_(self.tok.weight, std=0.02)
        nn.init.normal_(self.pos, std=0.02)
        with torch.no_grad():
            self.tok.weight[0].zero_()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if x.dim() != 2:
            raise RuntimeError("bert_base: expected token ids [N, L], got "
                               + str(x.dim()) + " dimensions")
        length = x.size(1)
        if length > self.max_positions:
            raise RuntimeError("bert_base: sequence length " + str(length)
                               + " is longer than its " + str(self.max_positions)
                               + " position embeddings")
        pad = x == 0
        pad = pad & ~pad.all(dim=1, keepdim=True)
        h = self.tok(x) + self.pos[:, :length]
        h = self.drop(self.norm(h))
        h = self.encoder(h, src_key_padding_mask=pad)
        if self.mean_pool:
            keep = (~pad).unsqueeze(-1).to(h.dtype)
            h = (h * keep).sum(dim=1) / keep.sum(dim=1).clamp(min=1.0)
        else:
            h = h[:, 0]
        return self.head(h)
