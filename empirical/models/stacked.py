"""The Transformer of `transformer.py` for E members at once, written out on stacked weights.

`stacked_logits(config, params, idx)` computes what `Transformer.forward(idx)` computes, for
every member of a pack in one pass: `params` maps each parameter name of the module to that
parameter stacked along a leading member axis, and every linear map is one batched matmul
over members. It covers fixed-length inputs without dropout (what a pack may hold). Written
out instead of `torch.func.vmap` over the module because on a CPU vmap's batching rules cost
more than the stacking saves (benchmarks/bench_engine.py); tested equal to the module.
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


def _attention(c: ModelConfig, x, p: dict, name: str, last_only: bool):
    """Causal self-attention of the stacked block `name` on x (E, B, T, D); with last_only,
    only the query at the last position (over every key): (E, B, 1, D)."""
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
    out = F.scaled_dot_product_attention(q, k, v, is_causal=not last_only)
    n = 1 if last_only else T
    return _linear(out.transpose(1, 2).reshape(E, B * n, D), p, name + ".o").view(E, B, n, D)


def _block(c: ModelConfig, x, p: dict, name: str, last_only: bool):
    """A stacked Block (pre- or post-LayerNorm) on x (E, B, T, D)."""
    E, B = x.shape[:2]
    here = x[:, :, -1:] if last_only else x

    def mlp(t):
        hidden = _linear(t.reshape(E, -1, t.shape[-1]), p, name + ".mlp.0")
        hidden = F.gelu(hidden) if c.activation == "gelu" else F.relu(hidden)
        return _linear(hidden, p, name + ".mlp.2").view(t.shape)
    if c.norm == "post":
        x = _layer_norm(here + _attention(c, x, p, name + ".attn", last_only), p, name + ".ln1")
        return _layer_norm(x + mlp(x), p, name + ".ln2")
    x = here + _attention(c, _layer_norm(x, p, name + ".ln1"), p, name + ".attn", last_only)
    return x + mlp(_layer_norm(x, p, name + ".ln2"))


def stacked_logits(c: ModelConfig, p: dict, idx: torch.Tensor) -> torch.Tensor:
    """Logits at the last position of every member's inputs: idx (E, B, T) -> (E, B, out)."""
    E, B, T = idx.shape
    tok = p["tok.weight"]
    x = tok[torch.arange(E, device=idx.device).view(E, 1, 1), idx]
    if c.embed_scale:
        x = x * math.sqrt(c.d)
    if c.positions == "learned":
        x = x + p["pos.weight"][:, :T].unsqueeze(1)
    else:
        x = x + sinusoidal_positions(T, c.d).to(x.device)
    for layer in range(c.layers):
        x = _block(c, x, p, f"blocks.{layer}", last_only=layer == c.layers - 1)
    x = x[:, :, 0]
    if c.norm == "pre":
        x = _layer_norm(x, p, "ln_f")
    return _linear(x, p, "unembed")
