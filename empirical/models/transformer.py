"""Decoder-only pre-LayerNorm Transformer, in one file (nanoGPT-style, small and plain).

Learned token and position embeddings, `layers` blocks of causal multi-head attention and
a GELU MLP, a final LayerNorm and an untied unembedding (with an optional bias, `head_bias`). Two init conventions:
multiplier (std = gamma / sqrt(d_in), larger gamma = larger init) and exponent
(std = d_in ** -gamma, Zhang et al.: larger gamma = smaller init). Every weight matrix
uses its fan-in d_in; embeddings use d_in = d_model. Biases start at 0, LayerNorm at 1.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from ...errors import ConfigError

INITS = ("multiplier", "exponent")
DECAY_SETS = ("matrices", "non_embedding", "all")


@dataclass(frozen=True)
class ModelConfig:
    """Architecture and init; the vocabulary and sequence length come from the task."""

    d: int = 64
    heads: int = 2
    layers: int = 2
    mlp_ratio: int = 4
    init: str = "multiplier"
    gamma: float = 0.8
    head_bias: bool = False

    def __post_init__(self):
        for f in ("d", "heads", "layers", "mlp_ratio"):
            v = getattr(self, f)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ConfigError(f, v, "a positive integer")
        if self.d % self.heads:
            raise ConfigError("heads", self.heads, f"a divisor of d = {self.d}")
        if self.init not in INITS:
            raise ConfigError("init", self.init, "one of " + ", ".join(INITS))
        if isinstance(self.gamma, bool) or not isinstance(self.gamma, (int, float)) or not (
                math.isfinite(self.gamma) and self.gamma > 0):
            raise ConfigError("gamma", self.gamma, "an init scale > 0")
        if not isinstance(self.head_bias, bool):
            raise ConfigError("head_bias", self.head_bias, "true or false")

    def init_std(self, fan_in: int) -> float:
        if self.init == "multiplier":
            return self.gamma / math.sqrt(fan_in)
        return fan_in ** (-self.gamma)

    def to_dict(self) -> dict:
        return asdict(self)


class Attention(nn.Module):
    def __init__(self, c: ModelConfig, seq_len: int):
        super().__init__()
        self.heads = c.heads
        self.q, self.k, self.v, self.o = (nn.Linear(c.d, c.d) for _ in range(4))
        self.register_buffer("mask", torch.tril(torch.ones(seq_len, seq_len, dtype=torch.bool)))

    def forward(self, x):
        B, T, D = x.shape
        h = self.heads

        def split(t):
            return t.view(B, T, h, D // h).transpose(1, 2)
        q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
        att = (q @ k.transpose(-2, -1)) / math.sqrt(D // h)
        att = att.masked_fill(~self.mask[:T, :T], float("-inf")).softmax(-1)
        return self.o((att @ v).transpose(1, 2).reshape(B, T, D))


class Block(nn.Module):
    def __init__(self, c: ModelConfig, seq_len: int):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(c.d), nn.LayerNorm(c.d)
        self.attn = Attention(c, seq_len)
        self.mlp = nn.Sequential(nn.Linear(c.d, c.mlp_ratio * c.d), nn.GELU(),
                                 nn.Linear(c.mlp_ratio * c.d, c.d))

    def forward(self, x):
        x = x + self.attn(self.ln1(x))
        return x + self.mlp(self.ln2(x))


class Transformer(nn.Module):
    def __init__(self, c: ModelConfig, vocab_size: int, seq_len: int, n_out: int | None = None):
        super().__init__()
        self.config = c
        self.tok = nn.Embedding(vocab_size, c.d)
        self.pos = nn.Embedding(seq_len, c.d)
        self.blocks = nn.ModuleList(Block(c, seq_len) for _ in range(c.layers))
        self.ln_f = nn.LayerNorm(c.d)
        self.unembed = nn.Linear(c.d, n_out or vocab_size, bias=c.head_bias)   # n_out: a class head
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self):
        c = self.config
        for m in self.modules():
            if isinstance(m, nn.Linear):
                m.weight.normal_(0.0, c.init_std(m.in_features))
                if m.bias is not None:
                    m.bias.zero_()
            elif isinstance(m, nn.Embedding):
                m.weight.normal_(0.0, c.init_std(c.d))
            elif isinstance(m, nn.LayerNorm):
                m.weight.fill_(1.0)
                m.bias.zero_()

    def forward(self, idx, lengths=None):
        """Logits at the last position, (B, vocab or classes); with right-padded sequences, at
        the last real token (lengths - 1), which the causal mask keeps blind to the padding."""
        x = self.tok(idx) + self.pos(torch.arange(idx.shape[1], device=idx.device))
        for b in self.blocks:
            x = b(x)
        last = x[:, -1] if lengths is None else x[torch.arange(len(x), device=x.device), lengths - 1]
        return self.unembed(self.ln_f(last))

    def decayed_weights(self):
        """Every weight matrix except the embeddings (the `matrices` decay set; weight_norm's set)."""
        return [m.weight for m in self.modules() if isinstance(m, nn.Linear)]

    def decayed_parameters(self, which: str = "matrices") -> list:
        """The parameters a decay reading touches: `matrices` (Linear weights), `non_embedding`
        (the paper's theta minus E: every parameter but the token and position embeddings,
        biases and LayerNorm included) or `all`."""
        if which == "matrices":
            return self.decayed_weights()
        if which == "non_embedding":
            emb = {id(self.tok.weight), id(self.pos.weight)}
            return [p for p in self.parameters() if id(p) not in emb]
        if which == "all":
            return list(self.parameters())
        raise ConfigError("decay_set", which, "one of " + ", ".join(DECAY_SETS))

    def components(self) -> dict:
        """Freezable components by name -> list of parameters."""
        comps = {"embedding": [self.tok.weight, self.pos.weight],
                 "unembed": list(self.unembed.parameters()), "final_ln": list(self.ln_f.parameters())}
        for i, b in enumerate(self.blocks):
            comps[f"layer{i}"] = list(b.parameters())
            comps[f"layer{i}.attn"] = list(b.attn.parameters()) + list(b.ln1.parameters())
            comps[f"layer{i}.mlp"] = list(b.mlp.parameters()) + list(b.ln2.parameters())
        return comps


def cross_entropy(logits, targets):
    return F.cross_entropy(logits, targets)
