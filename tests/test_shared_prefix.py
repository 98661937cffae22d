"""Evaluation that computes a prefix shared by many rows once (metrics/evaluate.py), against the
plain forward over every whole row, and its choice of prefix against a brute-force count."""
import numpy as np
import pytest
import torch

from critwin.empirical.metrics.evaluate import evaluate_split, shared_prefix, shared_prefix_logits
from critwin.empirical.models import ModelConfig
from critwin.empirical.models.transformer import Transformer
from critwin.empirical.presets import alchemy_flat
from critwin.empirical.sweep import config_from_flat
from critwin.empirical.tasks.base import Split
from critwin.empirical.train import initial_model


def episodes(n_prefix=7, per=(1, 3, 5, 2, 4, 1, 6), P=20, rest=5, vocab=13, seed=0):
    """Rows that share one of n_prefix random prefixes of length P (groups of unequal sizes),
    each followed by its own random rest, shuffled."""
    rng = np.random.default_rng(seed)
    pre = rng.integers(0, vocab, (n_prefix, P))
    rows = [np.concatenate([pre[g], rng.integers(0, vocab, rest)]) for g in range(n_prefix) for _ in range(per[g])]
    return np.stack(rows)[rng.permutation(sum(per))]


@pytest.mark.parametrize("norm,positions,dropout", [("pre", "learned", 0.0), ("post", "sinusoidal", 0.1)])
@pytest.mark.parametrize("padded", [False, True])
def test_shared_prefix_logits_equal_the_plain_forward(norm, positions, dropout, padded):
    """Every row's logits with its prefix read from the cache equal the whole row's forward
    (pre- and post-LN, learned and fixed positions, right-padded rows), in eval mode."""
    torch.manual_seed(0)
    model = Transformer(ModelConfig(d=32, heads=4, layers=3, norm=norm, positions=positions, dropout=dropout),
                        vocab_size=13, seq_len=25, n_out=9).eval()
    x = episodes()
    lengths = np.random.default_rng(1).integers(22, 26, len(x)) if padded else None
    found = shared_prefix(x, lengths)
    assert found is not None
    assert found[0] == 20                     # the shared prefix, not a row's own tokens
    xt = torch.as_tensor(x)
    lt = None if lengths is None else torch.as_tensor(lengths)
    with torch.no_grad():
        plain = model(xt, lt)
        shared = shared_prefix_logits(model, xt, lt, *found, batch=4)
    assert torch.allclose(shared, plain, atol=1e-5, rtol=1e-5)


def test_the_prefix_chosen_is_where_a_brute_force_count_of_tokens_is_least():
    """P, the groups and each group's representative against counting distinct prefixes by set."""
    x = episodes(P=30, rest=4)
    P, firsts, group = shared_prefix(x)
    n, T = x.shape
    cost = [len({tuple(r[:k]) for r in x}) * k + n * (T - k) for k in range(T)]
    assert P == int(np.argmin(cost)) == 30
    for i, row in enumerate(x):
        assert tuple(x[firsts[group[i]], :P]) == tuple(row[:P])
    assert len(set(group)) == len({tuple(r[:P]) for r in x}) == 7


def test_no_sharing_where_rows_share_little():
    """Distinct rows (or one row) are evaluated whole."""
    rng = np.random.default_rng(0)
    assert shared_prefix(rng.integers(0, 50, (40, 12))) is None
    assert shared_prefix(np.zeros((1, 12), dtype=np.int64)) is None


def test_alchemy_held_out_scores_match_the_plain_evaluation():
    """On the withheld task's held-out split (8 queries per episode's support), the shared
    evaluation gives the plain one's logits, so the same events."""
    cfg = config_from_flat({**alchemy_flat("quick", "withheld"), "eval_max": 200})
    model, data = initial_model(cfg)
    model.eval()
    held = data.splits["test"].sample(200)
    found = shared_prefix(held.inputs, held.extra.get("lengths"))
    assert found is not None and len(found[1]) * 4 <= len(held)     # several queries per support
    x = torch.as_tensor(held.inputs)
    with torch.no_grad():
        plain = model(x)
        shared = shared_prefix_logits(model, x, None, *found, batch=64)
    assert torch.allclose(shared, plain, atol=1e-5, rtol=1e-5)
    got = evaluate_split(model, held, torch.device("cpu"))
    assert got["acc"] == float((plain.argmax(-1) == torch.as_tensor(held.targets)).float().mean())
    assert np.isfinite(got["event_a"])


def test_forward_without_a_prefix_is_causal_attention_written_out():
    """The forward without a past: its logits are those of a causal softmax attention block
    written out here by hand."""
    torch.manual_seed(0)
    model = Transformer(ModelConfig(d=16, heads=2, layers=1, norm="pre"), vocab_size=7, seq_len=6, n_out=5).eval()
    x = torch.randint(0, 7, (3, 6))
    b, a = model.blocks[0], model.blocks[0].attn
    h = model.embed(x)
    z = b.ln1(h)
    q, k, v = (t.view(3, 6, 2, 8).transpose(1, 2) for t in (a.q(z), a.k(z), a.v(z)))
    att = (q @ k.transpose(-2, -1)) / np.sqrt(8)
    att = att.masked_fill(~torch.ones(6, 6, dtype=torch.bool).tril(), float("-inf")).softmax(-1)
    h = h + a.o((att @ v).transpose(1, 2).reshape(3, 6, 16))
    h = h + b.mlp(b.ln2(h))
    want = model.unembed(model.ln_f(h[:, -1]))
    with torch.no_grad():
        assert torch.allclose(model(x), want, atol=1e-5)
