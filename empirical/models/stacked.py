"""The Transformer of `transformer.py` for E members at once, written out on stacked weights.

`stacked_logits(config, params, idx)` computes what `Transformer.forward(idx)` computes, for
every member of a pack in one pass: `params` maps each parameter name of the module to that
parameter stacked along a leading member axis, and every linear map is one batched matmul
over members. It covers fixed-length inputs (what a pack may hold). Written out instead of
`torch.func.vmap` over the module because on a CPU vmap's batching rules cost more than the
stacking saves (benchmarks/bench_engine.py); tested equal to the module.

Dropout (`MemberDropout`): each member draws its masks from its own copy of the random state
the module would train from alone, in the module's order and shapes (the embedding sum, then
per block the attention weights, the attention output, the MLP's hidden layer and its output),
through torch's own dropout, so a member's masks are the ones its run draws alone.
"""
from __future__ import annotations

import math

import torch
import torch.nn.functional as F
from critwin.empirical.models.transformer import ModelConfig, sinusoidal_positions


def _linear(x, p: dict, name: str):
    """x (E, N, in) through the stacked nn.Linear `name`: (E, N, out)."""
    w, b = p[name + ".weight"], p.get(name + ".bias")
    if b is None:
        return torch.bmm(x, w.transpose(1, 2))
    return torch.baddbmm(b.unsqueeze(1), x, w.transpose(1, 2))


def _layer_norm(x, p: dict, name: str):
    """x (E, ..., D) through the stacked nn.LayerNorm `name`."""
    w, b = p[name + ".weight"], p[name + ".bias"]
    shape = (w.shape[0],) + (1,) * (x.dim() - 2) + (w.shape[1],)
    return torch.addcmul(b.view(shape), F.layer_norm(x, x.shape[-1:]), w.view(shape))


class MemberDropout:
    """Dropout with probability p for E members, each from its own random state (the default
    generator's state of `device`, as a run alone holds it after its seeded initialisation):
    `mask(shape)` is (E, *shape), member e's slice what `F.dropout` of a `shape` tensor would
    multiply by (0, or 1 / (1 - p)) in a run alone. `states` is read and advanced."""

    def __init__(self, p: float, states: list, device):
        self.p, self.states, self.device = p, states, torch.device(device)

    def _get(self):
        return torch.cuda.get_rng_state(self.device) if self.device.type == "cuda" else torch.get_rng_state()

    def _set(self, state) -> None:
        if self.device.type == "cuda":
            torch.cuda.set_rng_state(state, self.device)
        else:
            torch.set_rng_state(state)

    @torch.no_grad()
    def mask(self, shape) -> torch.Tensor:
        outer = self._get()
        if self.device.type == "cpu":     # torch's CPU dropout: noise = bernoulli_(1 - p) / (1 - p), in place here
            out = torch.empty((len(self.states), *shape))
            for e, state in enumerate(self.states):
                self._set(state)
                out[e].bernoulli_(1 - self.p)
                self.states[e] = self._get()
            out.div_(1 - self.p)
        else:                              # a fused kernel elsewhere: its own output on ones is the noise
            ones, parts = torch.ones(shape, device=self.device), []
            for e, state in enumerate(self.states):
                self._set(state)
                parts.append(F.dropout(ones, self.p, training=True))
                self.states[e] = self._get()
            out = torch.stack(parts)
        self._set(outer)
        return out


def _drop(x, drop: MemberDropout | None, shape=None):
    """x (E, ...) times each member's dropout mask of `shape` (x's per-member shape if None)."""
    if drop is None:
        return x
    return x * drop.mask(shape or x.shape[1:]).view(x.shape)


def _attention(c: ModelConfig, x, p: dict, name: str, last_only: bool, drop: MemberDropout | None = None):
    """Causal self-attention of the stacked block `name` on x (E, B, T, D); with last_only,
    only the query at the last position (over every key): (E, B, 1, D). With `drop`, the
    module's training path: explicit scores, softmax, dropout on the attention weights."""
    E, B, T, D = x.shape
    h = c.heads

    def heads(t, n):        # (E, B * n, D) -> (E * B, h, n, D / h)
        return t.view(E * B, n, h, D // h).transpose(1, 2)
    flat = x.reshape(E, B * T, D)
    k, v = heads(_linear(flat, p, name + ".k"), T), heads(_linear(flat, p, name + ".v"), T)
    if last_only:
        q = heads(_linear(x[:, :, -1], p, name + ".q"), 1)
    else:
        q = heads(_linear(flat, p, name + ".q"), T)
    n = 1 if last_only else T
    if drop is None:
        out = F.scaled_dot_product_attention(q, k, v, is_causal=not last_only)
    else:
        att = (q @ k.transpose(-2, -1)) / math.sqrt(D // h)
        if not last_only:
            att = att.masked_fill(~torch.ones(T, T, dtype=torch.bool, device=x.device).tril(), float("-inf"))
        out = _drop(att.softmax(-1), drop, (B, h, n, T)) @ v
    return _linear(out.transpose(1, 2).reshape(E, B * n, D), p, name + ".o").view(E, B, n, D)


def _block(c: ModelConfig, x, p: dict, name: str, last_only: bool, drop: MemberDropout | None = None):
    """A stacked Block (pre- or post-LayerNorm) on x (E, B, T, D)."""
    E, B = x.shape[:2]
    here = x[:, :, -1:] if last_only else x

    def mlp(t):
        hidden = _linear(t.reshape(E, -1, t.shape[-1]), p, name + ".mlp.0")
        hidden = F.gelu(hidden) if c.activation == "gelu" else F.relu(hidden)
        hidden = _drop(hidden, drop, (*t.shape[1:-1], hidden.shape[-1]))
        return _drop(_linear(hidden, p, name + ".mlp.2").view(t.shape), drop)

    def attn(t):
        return _drop(_attention(c, t, p, name + ".attn", last_only, drop), drop)
    if c.norm == "post":
        x = _layer_norm(here + attn(x), p, name + ".ln1")
        return _layer_norm(x + mlp(x), p, name + ".ln2")
    x = here + attn(_layer_norm(x, p, name + ".ln1"))
    return x + mlp(_layer_norm(x, p, name + ".ln2"))


def stacked_logits(c: ModelConfig, p: dict, idx: torch.Tensor, drop: MemberDropout | None = None) -> torch.Tensor:
    """Logits at the last position of every member's inputs: idx (E, B, T) -> (E, B, out);
    `drop`: the members' dropout (training), None in evaluation."""
    E, B, T = idx.shape
    tok = p["tok.weight"]
    x = tok[torch.arange(E, device=idx.device).view(E, 1, 1), idx]
    if c.embed_scale:
        x = x * math.sqrt(c.d)
    if c.positions == "learned":
        x = x + p["pos.weight"][:, :T].unsqueeze(1)
    else:
        x = x + sinusoidal_positions(T, c.d).to(x.device)
    x = _drop(x, drop)
    for layer in range(c.layers):
        x = _block(c, x, p, f"blocks.{layer}", last_only=layer == c.layers - 1, drop=drop)
    x = x[:, :, 0]
    if c.norm == "pre":
        x = _layer_norm(x, p, "ln_f")
    return _linear(x, p, "unembed")
