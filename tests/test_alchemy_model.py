"""The Alchemy paper's model and optimizer options, against torch's own Transformer layer."""
import math

import numpy as np
import pytest
import torch

from critwin.cli.main import main
from critwin.empirical import TrainConfig, train
from critwin.empirical.models import ModelConfig
from critwin.empirical.models.transformer import Block, Transformer, sinusoidal_positions
from critwin.errors import ConfigError


@pytest.mark.parametrize("norm,act", [("post", "relu"), ("pre", "gelu")])
def test_block_equals_torch_encoder_layer(norm, act):
    """Our block with a causal mask computes what nn.TransformerEncoderLayer computes with the
    same weights (norm_first = pre-LN)."""
    torch.manual_seed(0)
    c = ModelConfig(d=32, heads=4, mlp_ratio=2, norm=norm, activation=act)
    ours = Block(c).eval()
    ref = torch.nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, activation=act, batch_first=True,
                                           norm_first=norm == "pre").eval()
    with torch.no_grad():
        a = ours.attn
        ref.self_attn.in_proj_weight.copy_(torch.cat([a.q.weight, a.k.weight, a.v.weight]))
        ref.self_attn.in_proj_bias.copy_(torch.cat([a.q.bias + 0.1, a.k.bias, a.v.bias]))
        a.q.bias.add_(0.1)
        ref.self_attn.out_proj.weight.copy_(a.o.weight)
        ref.self_attn.out_proj.bias.copy_(a.o.bias)
        ref.linear1.weight.copy_(ours.mlp[0].weight)
        ref.linear1.bias.copy_(ours.mlp[0].bias)
        ref.linear2.weight.copy_(ours.mlp[2].weight)
        ref.linear2.bias.copy_(ours.mlp[2].bias)
        for mine, theirs in ((ours.ln1, ref.norm1), (ours.ln2, ref.norm2)):
            mine.weight.uniform_(0.5, 1.5)
            theirs.weight.copy_(mine.weight)
            theirs.bias.copy_(mine.bias)
    x = torch.randn(3, 7, 32)
    mask = torch.nn.Transformer.generate_square_subsequent_mask(7)
    torch.testing.assert_close(ours(x), ref(x, src_mask=mask, is_causal=True), rtol=1e-5, atol=1e-5)


def test_sinusoidal_positions_are_vaswanis():
    t = sinusoidal_positions(50, 16).numpy()
    for pos in (0, 7, 49):
        for i in range(8):
            angle = pos / 10000 ** (2 * i / 16)
            assert t[pos, 2 * i] == pytest.approx(math.sin(angle), abs=1e-5)
            assert t[pos, 2 * i + 1] == pytest.approx(math.cos(angle), abs=1e-5)


def test_paper_model_has_about_2_14m_parameters_and_no_position_parameters():
    m = Transformer(ModelConfig.alchemy_paper(), vocab_size=25, seq_len=300, n_out=108)
    n = sum(p.numel() for p in m.parameters())
    assert 2.10e6 < n < 2.16e6, n
    assert m.pos is None and len(m.embeddings()) == 1 and "final_ln" not in m.components()
    decayed = {id(p) for p in m.decayed_parameters("non_embedding")}
    assert id(m.tok.weight) not in decayed and len(decayed) == len(list(m.parameters())) - 1


def test_cosine_schedule_clipping_and_dropout_are_deterministic_and_take_effect():
    base = dict(model=ModelConfig(d=16, dropout=0.1), steps=30, batch_size=32, eval_every=10, lr=1e-2)
    cfg = TrainConfig(**base, lr_schedule="cosine", clip=0.5)
    assert cfg.lr_at(0) == pytest.approx(1e-2) and cfg.lr_at(15) == pytest.approx(5e-3)
    assert cfg.lr_at(29) == pytest.approx(1e-2 * 0.5 * (1 + math.cos(math.pi * 29 / 30)))
    a, b = train(cfg, progress=False), train(cfg, progress=False)
    assert a.metrics.equals(b.metrics)
    c = train(TrainConfig(**base), progress=False)
    assert not a.metrics.equals(c.metrics)
    assert TrainConfig(**base).run_id() != cfg.run_id()
    # adding the new fields at their defaults keeps every old run id
    assert "lr_schedule" not in TrainConfig().identity() and "dropout" not in TrainConfig().identity()["model"]
    for bad in ({"lr_schedule": "linear"}, {"clip": 0}, {"clip": "x"}):
        with pytest.raises(ConfigError, match=next(iter(bad))):
            TrainConfig(**{**base, **bad})
    with pytest.raises(ConfigError, match="dropout"):
        ModelConfig(dropout=1.0)
    with pytest.raises(ConfigError, match="norm"):
        ModelConfig(norm="middle")


def test_train_alchemy_paper_size_from_the_cli(tmp_path, capsys):
    import json
    code = main(["train", "alchemy", "--size", "paper", "--steps", "2", "--eval-every", "1", "--chemistries", "4",
                 "--store", str(tmp_path / "s"), "--no-progress", "--json"])
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    m = out["config"]["model"]
    assert (m["d"], m["layers"], m["heads"], m["norm"], m["positions"], m["dropout"]) == (256, 4, 4, "post",
                                                                                          "sinusoidal", 0.1)
    assert out["config"]["lr"] == 1e-4 and out["config"]["lr_schedule"] == "cosine" and out["config"]["clip"] == 1.0
    assert 2.10e6 < out["summary"]["n_parameters"] < 2.16e6
    code = main(["train", "alchemy", "--epochs", "3", "--chemistries", "8", "--store", str(tmp_path / "s"),
                 "--no-progress", "--json", "--eval-every", "5"])
    assert code == 0
    steps = json.loads(capsys.readouterr().out)["config"]["steps"]
    assert steps == 3 * 2          # 8 chemistries x 8 withheld-pair queries = 64 examples, 2 batches of 32
    assert main(["train", "alchemy", "--epochs", "0", "--store", str(tmp_path / "s")]) == 2
    assert "epochs" in capsys.readouterr().err


@pytest.mark.parametrize("norm,layers", [("pre", 2), ("post", 1), ("post", 3)])
def test_last_token_head_equals_the_full_sequence_computation(norm, layers):
    """The head's fast path (the last block computes only the rows it reads) gives the logits and
    the gradients of running every position through every block and reading the row after."""
    torch.manual_seed(1)
    c = ModelConfig(d=16, heads=2, layers=layers, norm=norm, positions="sinusoidal" if norm == "post" else "learned")
    m = Transformer(c, vocab_size=20, seq_len=9, n_out=11)
    x = torch.randint(0, 20, (5, 9))
    lengths = torch.tensor([9, 4, 1, 7, 9])
    fast = m(x, lengths)
    h = m.drop(m.tok(x) + (m.pos(torch.arange(9)) if m.pos is not None else m.pos_table[:9]))
    for b in m.blocks:
        h = b(h)
    slow = m.unembed(m.ln_f(h[torch.arange(5), lengths - 1]))
    torch.testing.assert_close(fast, slow, rtol=1e-5, atol=1e-6)
    g_fast = torch.autograd.grad(fast.square().sum(), list(m.parameters()), allow_unused=True)
    g_slow = torch.autograd.grad(slow.square().sum(), list(m.parameters()), allow_unused=True)
    for a, b in zip(g_fast, g_slow):
        if a is None or b is None:
            assert (a is None or not a.abs().sum()) and (b is None or not b.abs().sum())
        else:
            torch.testing.assert_close(a, b, rtol=1e-4, atol=1e-6)


def test_attention_with_dropout_takes_the_explicit_path_and_agrees():
    """Training with dropout uses an explicit masked softmax (torch's fused kernels are slow
    with dropout); with a vanishing dropout rate it gives what the fused kernel gives."""
    torch.manual_seed(2)
    m = Transformer(ModelConfig(d=16, heads=2, layers=2, dropout=0.1), vocab_size=20, seq_len=9, n_out=11)
    for mod in m.modules():
        if isinstance(mod, torch.nn.Dropout):
            mod.p = 1e-12
    x, lengths = torch.randint(0, 20, (4, 9)), torch.tensor([9, 3, 6, 1])
    explicit = m.train()(x, lengths)
    fused = m.eval()(x, lengths)
    torch.testing.assert_close(explicit, fused, rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(m.train()(x, all_positions=True), m.eval()(x, all_positions=True), rtol=1e-5, atol=1e-6)
