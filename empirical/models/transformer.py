"""Decoder-only Transformer, in one file (nanoGPT-style, small and plain).

Token and position embeddings, `layers` blocks of causal multi-head attention and an MLP, and
an untied unembedding (with an optional bias, `head_bias`). The default is pre-LayerNorm with a
final LayerNorm, learned positions, GELU and no dropout (the anchor tasks); the Alchemy paper's
model is post-LayerNorm (no final LayerNorm), sinusoidal positions, token embedding scaled by
sqrt(d), ReLU and dropout 0.1 (`ModelConfig.alchemy_paper`). Two init conventions:
multiplier (std = gamma / sqrt(d_in), larger gamma = larger init) and exponent
(std = d_in ** -gamma, Zhang et al.: larger gamma = smaller init). Every weight matrix
uses its fan-in d_in; embeddings use d_in = d_model. Biases start at 0, LayerNorm at 1.
A third, `pytorch`, is what the Alchemy authors' code runs: PyTorch's own module defaults
(`pytorch_default_init`), gamma unused. `layer_init` `cloned` starts every block with block 0's
weights, as `nn.TransformerEncoder` does by deep-copying one layer.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import torch
import torch.nn as nn
import torch.nn.functional as F

from critwin.errors import ConfigError
from critwin.vocabulary import DECAY_SETS

INITS = ("multiplier", "exponent", "pytorch")
LAYER_INITS = ("independent", "cloned")
NORMS = ("pre", "post")
POSITIONS = ("learned", "sinusoidal")
ACTIVATIONS = ("gelu", "relu")


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
    norm: str = "pre"               # LayerNorm before each sublayer (+ a final one) or after the residual add
    positions: str = "learned"
    embed_scale: bool = False       # token embedding times sqrt(d)
    dropout: float = 0.0            # on attention weights, sublayer outputs and the embedding sum
    activation: str = "gelu"
    layer_init: str = "independent"  # cloned: every block starts as a copy of block 0

    @classmethod
    def alchemy_paper(cls) -> "ModelConfig":
        """The Alchemy paper's model: 4 layers, d 256, 4 heads, FFN 512, dropout 0.1, post-LN,
        sinusoidal positions, sqrt(d)-scaled embedding, a head with bias (about 2.14M
        parameters with the 25-token vocabulary and 108 classes). Its init is not stated: ours
        is N(0, 1/fan_in) (gamma 1)."""
        return cls(d=256, heads=4, layers=4, mlp_ratio=2, gamma=1.0, head_bias=True, norm="post",
                   positions="sinusoidal", embed_scale=True, dropout=0.1, activation="relu")

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
        for f in ("head_bias", "embed_scale"):
            if not isinstance(getattr(self, f), bool):
                raise ConfigError(f, getattr(self, f), "true or false")
        for f, allowed in (("norm", NORMS), ("positions", POSITIONS), ("activation", ACTIVATIONS),
                           ("layer_init", LAYER_INITS)):
            if getattr(self, f) not in allowed:
                raise ConfigError(f, getattr(self, f), "one of " + ", ".join(allowed))
        if isinstance(self.dropout, bool) or not isinstance(self.dropout, (int, float)) or not 0 <= self.dropout < 1:
            raise ConfigError("dropout", self.dropout, "a probability in [0, 1)")

    def init_std(self, fan_in: int) -> float:
        if self.init == "multiplier":
            return self.gamma / math.sqrt(fan_in)
        return fan_in ** (-self.gamma)

    def to_dict(self) -> dict:
        return asdict(self)


def at_rows(x, rows):
    """x (B, T, D) at one position per sequence, rows (B,): (B, 1, D)."""
    return x[torch.arange(len(x), device=x.device), rows].unsqueeze(1)


class Attention(nn.Module):
    def __init__(self, c: ModelConfig):
        super().__init__()
        self.heads = c.heads
        self.q, self.k, self.v, self.o = (nn.Linear(c.d, c.d) for _ in range(4))
        self.drop = nn.Dropout(c.dropout)

    def kv(self, x):
        """Keys and values of x (B, T, D), split by head (B, h, T, D/h): what later positions read."""
        return self._split(self.k(x)), self._split(self.v(x))

    def _split(self, t):
        B, T, D = t.shape
        return t.view(B, T, self.heads, D // self.heads).transpose(1, 2)

    def forward(self, x, rows=None, past=None, keep=None):
        """Causal self-attention, (B, T, D). rows (B,): only the query at position rows[b] of
        each sequence, (B, 1, D), over the keys up to it (what a last-token head reads).
        past: (keys, values) of P positions before x's, (B, h, P, D/h) (a shared prefix's,
        `Transformer.prefix_cache`): x's positions follow them and see them all. keep: a list
        that x's own (keys, values) are appended to (how prefix_cache collects them)."""
        B, T, D = x.shape
        k, v = self.kv(x)
        if keep is not None:
            keep.append((k, v))
        P = 0 if past is None else past[0].shape[2]
        if past is not None:
            k, v = torch.cat([past[0], k], 2), torch.cat([past[1], v], 2)
        keys = torch.arange(P + T, device=x.device)
        if rows is None:
            q = self._split(self.q(x))
            sees = None if past is None else keys <= P + torch.arange(T, device=x.device)[:, None]
        else:
            q = self._split(self.q(at_rows(x, rows)))
            sees = (keys <= P + rows[:, None])[:, None, None, :]
        if self.training and self.drop.p > 0:   # fused kernels: slower with dropout
            if sees is None:
                sees = torch.ones(T, T, dtype=torch.bool, device=x.device).tril()
            att = (q @ k.transpose(-2, -1)) / math.sqrt(D // self.heads)
            out = self.drop(att.masked_fill(~sees, float("-inf")).softmax(-1)) @ v
        else:
            out = F.scaled_dot_product_attention(q, k, v, attn_mask=sees, is_causal=sees is None)
        return self.o(out.transpose(1, 2).reshape(B, -1, D))


class Block(nn.Module):
    def __init__(self, c: ModelConfig):
        super().__init__()
        self.ln1, self.ln2 = nn.LayerNorm(c.d), nn.LayerNorm(c.d)
        self.attn = Attention(c)
        act = nn.GELU() if c.activation == "gelu" else nn.ReLU()
        self.mlp = nn.Sequential(nn.Linear(c.d, c.mlp_ratio * c.d), nn.Sequential(act, nn.Dropout(c.dropout)),
                                 nn.Linear(c.mlp_ratio * c.d, c.d))
        self.drop = nn.Dropout(c.dropout)
        self.post = c.norm == "post"

    def kv(self, x):
        """The keys and values this block's attention reads at x's positions."""
        return self.attn.kv(x if self.post else self.ln1(x))

    def forward(self, x, rows=None, past=None, keep=None):
        """(B, T, D), or with rows (B,) the output at those positions only, (B, 1, D); past, keep:
        the keys and values of a prefix before x, and a list for x's own (Attention.forward)."""
        here = x if rows is None else at_rows(x, rows)
        if self.post:
            x = self.ln1(here + self.drop(self.attn(x, rows, past, keep)))
            return self.ln2(x + self.drop(self.mlp(x)))
        x = here + self.drop(self.attn(self.ln1(x), rows, past, keep))
        return x + self.drop(self.mlp(self.ln2(x)))


class Transformer(nn.Module):
    def __init__(self, c: ModelConfig, vocab_size: int, seq_len: int, n_out: int | None = None):
        super().__init__()
        self.config = c
        self.tok = nn.Embedding(vocab_size, c.d)
        if c.positions == "learned":
            self.pos = nn.Embedding(seq_len, c.d)
        else:
            self.pos = None
            self.register_buffer("pos_table", sinusoidal_positions(seq_len, c.d))
        self.drop = nn.Dropout(c.dropout)
        self.blocks = nn.ModuleList(Block(c) for _ in range(c.layers))
        self.ln_f = nn.LayerNorm(c.d) if c.norm == "pre" else nn.Identity()   # post-LN ends normalised
        self.unembed = nn.Linear(c.d, n_out or vocab_size, bias=c.head_bias)   # n_out: a class head
        self.reset_parameters()

    @torch.no_grad()
    def reset_parameters(self):
        c = self.config
        if c.init == "pytorch":
            pytorch_default_init(self)
        else:
            self._scaled_init()
        if c.layer_init == "cloned":
            first = self.blocks[0].state_dict()
            for b in self.blocks[1:]:
                b.load_state_dict(first)

    @torch.no_grad()
    def _scaled_init(self):
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

    def embed(self, idx, offset: int = 0):
        """Token plus position embedding of idx (B, T) at positions offset .. offset + T - 1."""
        T = idx.shape[1]
        if self.pos is not None:
            pos = self.pos(torch.arange(offset, offset + T, device=idx.device))
        else:
            pos = self.pos_table[offset:offset + T]
        return self.drop(self.tok(idx) * (math.sqrt(self.config.d) if self.config.embed_scale else 1.0) + pos)

    def forward(self, idx, lengths=None, all_positions: bool = False, past=None):
        """Logits at the last position, (B, vocab or classes); with right-padded sequences, at
        the last real token (lengths - 1), which the causal mask keeps blind to the padding.
        all_positions: logits at every position, (B, T, vocab) (a language model's next tokens).
        past: `prefix_cache` of the prefix each row continues (one per row; lengths still count
        from the prefix's start), so rows that share a prefix need not compute it again."""
        T = idx.shape[1]
        P = 0 if past is None else past[0][0].shape[2]
        layer_past = past if past is not None else [None] * len(self.blocks)
        x = self.embed(idx, P)
        for b, kv in zip(self.blocks[:-1], layer_past):
            x = b(x, past=kv)
        if all_positions:
            return self.unembed(self.ln_f(self.blocks[-1](x, past=layer_past[-1])))
        # the head reads one position, so the last block computes only that row (its keys: all)
        rows = torch.full((len(x),), T - 1, device=x.device) if lengths is None else lengths - 1 - P
        return self.unembed(self.ln_f(self.blocks[-1](x, rows, layer_past[-1])[:, 0]))

    def prefix_cache(self, idx) -> list:
        """Every block's (keys, values) over the prefixes idx (G, P): what `forward(past=...)`
        reads instead of recomputing a prefix that many sequences share."""
        x, cache = self.embed(idx), []
        for b in self.blocks[:-1]:
            x = b(x, keep=cache)          # each block's keys and values, computed once
        cache.append(self.blocks[-1].kv(x))   # the last block's output on the prefix is never read
        return cache

    def load_state_dict(self, state_dict, strict: bool = True, assign: bool = False):
        """Also reads checkpoints saved when each block kept its causal mask as a buffer."""
        state_dict = {k: v for k, v in state_dict.items() if not k.endswith(".attn.mask")}
        return super().load_state_dict(state_dict, strict=strict, assign=assign)

    def embeddings(self) -> list:
        """The token embedding and, when learned, the position embedding (the paper's E)."""
        return [self.tok.weight] + ([self.pos.weight] if self.pos is not None else [])

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
            emb = {id(p) for p in self.embeddings()}
            return [p for p in self.parameters() if id(p) not in emb]
        if which == "all":
            return list(self.parameters())
        raise ConfigError("decay_set", which, "one of " + ", ".join(DECAY_SETS))

    def components(self) -> dict:
        """Freezable components by name -> list of parameters."""
        comps = {"embedding": self.embeddings(), "unembed": list(self.unembed.parameters())}
        if list(self.ln_f.parameters()):
            comps["final_ln"] = list(self.ln_f.parameters())
        for i, b in enumerate(self.blocks):
            comps[f"layer{i}"] = list(b.parameters())
            comps[f"layer{i}.attn"] = list(b.attn.parameters()) + list(b.ln1.parameters())
            comps[f"layer{i}.mlp"] = list(b.mlp.parameters()) + list(b.ln2.parameters())
        return comps


@torch.no_grad()
def pytorch_default_init(model: "Transformer") -> None:
    """The init of the Alchemy authors' modules, PyTorch's defaults: embeddings N(0, 1);
    attention as nn.MultiheadAttention (q, k, v rows of one Xavier-uniform (3d, d) in-projection,
    zero biases; output projection U(+-1/sqrt(d)), zero bias); every other Linear (FFN, head)
    U(+-1/sqrt(fan_in)) for weight and bias; LayerNorm 1 and 0."""
    for m in model.modules():
        if isinstance(m, nn.Embedding):
            m.weight.normal_(0.0, 1.0)
        elif isinstance(m, nn.LayerNorm):
            m.weight.fill_(1.0)
            m.bias.zero_()
        elif isinstance(m, Attention):
            d = m.q.in_features
            in_proj = torch.empty(3 * d, d)
            nn.init.xavier_uniform_(in_proj)
            for lin, w in zip((m.q, m.k, m.v), in_proj.split(d)):
                lin.weight.copy_(w)
                lin.bias.zero_()
            bound = 1.0 / math.sqrt(d)
            m.o.weight.uniform_(-bound, bound)
            m.o.bias.zero_()
    done = {id(p) for a in model.modules() if isinstance(a, Attention) for p in a.parameters()}
    for m in model.modules():
        if isinstance(m, nn.Linear) and id(m.weight) not in done:
            bound = 1.0 / math.sqrt(m.in_features)
            m.weight.uniform_(-bound, bound)
            if m.bias is not None:
                m.bias.uniform_(-bound, bound)


def sinusoidal_positions(n: int, d: int) -> torch.Tensor:
    """Vaswani et al.'s fixed encodings: sin on even, cos on odd dimensions, wavelengths 2 pi .. 10^4 2 pi."""
    pos = torch.arange(n, dtype=torch.float32)[:, None]
    freq = torch.exp(-math.log(10000.0) * torch.arange(0, d, 2, dtype=torch.float32) / d)
    table = torch.zeros(n, d)
    table[:, 0::2] = torch.sin(pos * freq)
    table[:, 1::2] = torch.cos(pos * freq[: d // 2])
    return table


def cross_entropy(logits, targets):
    return F.cross_entropy(logits, targets)
