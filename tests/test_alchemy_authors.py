"""The `authors` Alchemy recipe against independent computations: PyTorch's own modules at
init, torch's AdamW with weight decay for one step, and the query format."""
import math

import numpy as np
import pytest
import torch

from critwin.empirical import RunStore, TrainConfig, train
from critwin.empirical.models import ModelConfig
from critwin.empirical.models.transformer import Transformer, sinusoidal_positions
from critwin.empirical.presets import alchemy_flat
from critwin.empirical.sweep import config_from_flat
from critwin.empirical.tasks import make_task
from critwin.empirical.tasks.alchemy import TOKEN
from critwin.empirical.train import batch_loss, initial_model
from critwin.errors import ConfigError

PAPER = ModelConfig.alchemy_paper()


def authors_model(**changes) -> Transformer:
    torch.manual_seed(0)
    c = ModelConfig(**{**PAPER.to_dict(), "init": "pytorch", "layer_init": "cloned", **changes})
    return Transformer(c, vocab_size=31, seq_len=182, n_out=108)


def test_pytorch_init_has_the_statistics_of_torchs_own_modules():
    """Each parameter's spread and range against nn.TransformerEncoderLayer, nn.Embedding and
    nn.Linear at their defaults (the authors' modules), at the paper's size."""
    m = authors_model(layer_init="independent")
    torch.manual_seed(1)
    ref = torch.nn.TransformerEncoderLayer(256, 4, 512, dropout=0.1, batch_first=True)
    head, emb = torch.nn.Linear(256, 108), torch.nn.Embedding(31, 256)
    b = m.blocks[0]
    pairs = [(torch.cat([b.attn.q.weight, b.attn.k.weight, b.attn.v.weight]), ref.self_attn.in_proj_weight, 0.01),
             (b.attn.o.weight, ref.self_attn.out_proj.weight, 0.02), (b.mlp[0].weight, ref.linear1.weight, 0.02),
             (b.mlp[0].bias, ref.linear1.bias, 0.15), (b.mlp[2].weight, ref.linear2.weight, 0.02),
             (b.mlp[2].bias, ref.linear2.bias, 0.15), (m.unembed.weight, head.weight, 0.03),
             (m.unembed.bias, head.bias, 0.3), (m.tok.weight, emb.weight, 0.05)]
    for ours, theirs, rtol in pairs:
        assert ours.shape == theirs.shape
        assert float(ours.std()) == pytest.approx(float(theirs.std()), rel=rtol)
        assert float(ours.abs().max()) <= float(theirs.abs().max()) * (1 + rtol) + 3 * float(theirs.std()) * (
            theirs is emb.weight)
    for ours, theirs in ((b.attn.q.bias, ref.self_attn.in_proj_bias), (b.attn.o.bias, ref.self_attn.out_proj.bias),
                         (b.ln1.weight, ref.norm1.weight), (b.ln1.bias, ref.norm1.bias)):
        assert torch.equal(ours.detach(), theirs.detach()[: len(ours)])


def test_the_embedding_dwarfs_the_positions_at_init():
    """The review's numbers: token embedding std 16 after the sqrt(d) scale, positions RMS ~0.71."""
    m = authors_model()
    idx = torch.randint(0, 31, (64, 182))
    tok = m.tok(idx) * math.sqrt(256)
    assert float(tok.std()) == pytest.approx(16.0, rel=0.05)
    pos = sinusoidal_positions(182, 256)
    assert float(pos.pow(2).mean().sqrt()) == pytest.approx(math.sqrt(0.5), rel=1e-3)
    assert torch.equal(m.pos_table, pos)


def test_cloned_layers_start_identical_and_independent_ones_do_not():
    cloned, independent = authors_model(), authors_model(layer_init="independent")
    first = cloned.blocks[0].state_dict()
    for b in cloned.blocks[1:]:
        assert all(torch.equal(first[k], v) for k, v in b.state_dict().items())
    assert not torch.equal(independent.blocks[0].attn.q.weight, independent.blocks[1].attn.q.weight)
    with pytest.raises(ConfigError, match="layer_init"):
        ModelConfig(layer_init="copied")


def tiny_authors(**over) -> TrainConfig:
    return config_from_flat(alchemy_flat("authors", "withheld", d=32, heads=4, layers=2, chemistries=8,
                                         steps=6, eval_every=3, **over))


def test_one_step_equals_torchs_adamw_with_weight_decay_on_every_parameter(tmp_path):
    """From the checkpoint after step 3, step 4 of the recipe (dropout off, so the step is fixed by
    the stored batch order) equals torch's AdamW(lr 1e-4, betas (0.9, 0.999), weight_decay 1e-3)
    over every parameter, with the gradient clipped to norm 1: the constant lr, the betas and the
    decay set all show. The decay is raised to 10 so that one step shows it (lr lambda = 1e-3; at
    1e-3 it is 1e-7, float noise); torch decays before its step, the recipe after: lr^2 lambda apart."""
    assert tiny_authors().wd_windows == ((0.0, 6.0, 1e-3),)
    cfg = tiny_authors(dropout=0.0, checkpoints=(3, 4), wd=10.0)
    assert cfg.betas == (0.9, 0.999) and cfg.lr_schedule == "constant" and cfg.decay_set == "all"
    run = train(cfg, progress=False)
    store = RunStore(tmp_path)
    store.save(run)
    s4, s5 = store.checkpoint(run.run_id, 3), store.checkpoint(run.run_id, 4)
    model, data = initial_model(cfg)
    model.load_state_dict(s4["model"])
    params = list(model.parameters())
    opt = torch.optim.AdamW(params, lr=1e-4, betas=(0.9, 0.999), weight_decay=10.0)
    opt.load_state_dict(s4["optimizer"])
    for g in opt.param_groups:
        assert g["lr"] == 1e-4 and tuple(g["betas"]) == (0.9, 0.999)
        g["weight_decay"] = 10.0                       # the recipe's own optimizer holds 0: its loop decays
    assert sum(len(g["params"]) for g in opt.param_groups) == len(params)
    split = data.splits["train"]
    idx = s4["perm"][s4["ptr"]:s4["ptr"] + cfg.batch_size]
    x, y = torch.as_tensor(split.inputs)[idx], torch.as_tensor(split.targets)[idx]
    lengths = torch.as_tensor(split.extra["lengths"])[idx]
    model.train()
    loss = batch_loss(model, x, y, lengths)
    opt.zero_grad()
    loss.backward()
    torch.nn.utils.clip_grad_norm_(params, 1.0)
    opt.step()
    moved = 0.0
    for name, p in model.named_parameters():
        torch.testing.assert_close(p.detach(), s5["model"][name], rtol=1e-5, atol=1e-7)
        moved = max(moved, float((s5["model"][name] - s4["model"][name]).abs().max()))
    assert moved > 1e-5                                 # the step did move the weights


def test_the_query_ends_at_its_potion_under_the_authors_format():
    io = make_task("alchemy_withheld", 0, chemistries=4).generate().splits["test"]
    potion = make_task("alchemy_withheld", 0, chemistries=4, query_end="potion").generate().splits["test"]
    n_io, n_p = io.extra["lengths"], potion.extra["lengths"]
    assert (n_p == n_io - 1).all()
    rows = np.arange(len(n_p))
    assert (io.inputs[rows, n_io - 1] == TOKEN["<io>"]).all()
    assert (potion.inputs[rows, n_p - 1] != TOKEN["<io>"]).all()
    np.testing.assert_array_equal(potion.inputs[rows, n_p - 1], io.inputs[rows, n_io - 2])   # the potion
    np.testing.assert_array_equal(io.targets, potion.targets)
    with pytest.raises(ConfigError, match="query_end"):
        make_task("alchemy_withheld", 0, query_end="sep")


def test_the_authors_size_keeps_the_ids_of_runs_stored_before_it():
    """Fields added for the recipe (layer_init, query_end) at their defaults leave a config's id as it was."""
    cfg = TrainConfig(task="alchemy_withheld", chemistries=8, steps=10)
    ident = cfg.identity()
    assert "query_end" not in ident and "layer_init" not in ident["model"]
    assert tiny_authors().run_id() != tiny_authors(query_end="io").run_id()


@pytest.mark.parametrize("variant,hops", [("withheld", None), ("composition", 2), ("decomposition", 2)])
def test_stone_states_pass_the_testing_kit_and_shorten_the_sequence(variant, hops):
    """One token per stone, its reward bound in: every answer recomputed from the tokens alone (the
    kit's oracle), held-out chemistries disjoint; the withheld episode shrinks from 182 tokens to 83."""
    from critwin.empirical.tasks.alchemy import AlchemyTask
    from critwin.testing import assert_task
    assert_task(lambda seed: AlchemyTask(variant, hops, seed, 3, input_format="stone_states"), examples=3)
    toks = make_task(f"alchemy_{variant}", 0, hops=hops, chemistries=3).generate()
    stones = make_task(f"alchemy_{variant}", 0, hops=hops, chemistries=3, input_format="stone_states").generate()
    np.testing.assert_array_equal(toks.splits["train"].targets, stones.splits["train"].targets)
    from critwin.empirical.tasks.alchemy import STONE_TOKEN0
    n_stones = (stones.splits["train"].inputs >= STONE_TOKEN0).sum(axis=1)      # 4 tokens each before, 1 now
    np.testing.assert_array_equal(toks.splits["train"].extra["lengths"] - stones.splits["train"].extra["lengths"],
                                  3 * n_stones)
    if variant == "withheld":
        assert toks.seq_len == 182 and stones.seq_len == 83
    assert stones.vocab_size == toks.vocab_size + 108 + 27


def test_stone_states_ablation_hides_each_stones_reward():
    data = make_task("alchemy_withheld", 0, chemistries=3, ablation=True, input_format="stone_states").generate()
    from critwin.empirical.tasks.alchemy import HIDDEN_REWARD0, STONE_TOKEN0, query_answers
    shown, hidden = data.splits["test"].inputs, data.splits["test_ablate_rewards"].inputs
    stone = (shown >= STONE_TOKEN0) & (shown < HIDDEN_REWARD0)
    assert stone.sum(axis=1).min() == 16 * 2 + 1
    np.testing.assert_array_equal(hidden[stone], HIDDEN_REWARD0 + (shown[stone] - STONE_TOKEN0) // 4)
    np.testing.assert_array_equal(hidden[~stone], shown[~stone])
    one = data.splits["test_ablate_query"].inputs
    assert ((one != shown).sum(axis=1) == 1).all()
    assert query_answers(data, "test_ablate_query", data.splits["test_ablate_query"]) == \
        data.splits["test"].targets.tolist()


def test_bf16_autocast_is_an_option_that_changes_only_its_own_runs():
    """precision bf16: the model's matmuls run in bf16 (torch's autocast, checked on a Linear's
    output), the logged scores stay fp32, the run repeats exactly, fp32 configs keep their ids,
    and such a run trains alone (no packs)."""
    from critwin.empirical.engine import pack_key
    cfg = tiny_authors(dropout=0.0)
    bf = cfg.__class__(**{**cfg.__dict__, "precision": "bf16"})
    assert "precision" not in cfg.identity() and bf.run_id() != cfg.run_id()
    model, data = initial_model(bf)
    seen = []
    model.blocks[0].attn.q.register_forward_hook(lambda mod, inp, out: seen.append(out.dtype))
    x = torch.as_tensor(data.splits["train"].inputs[:4])
    with bf.autocast():
        model(x)
    with cfg.autocast():
        model(x)
    assert seen == [torch.bfloat16, torch.float32]
    a, b = train(bf, progress=False), train(bf, progress=False)
    assert a.metrics.equals(b.metrics) and a.summary["status"] == "complete"
    assert not np.allclose(a.metrics.value, train(cfg, progress=False).metrics.value, rtol=1e-6, equal_nan=True)
    plain = TrainConfig(steps=20, eval_every=10)
    assert pack_key(plain) is not None and pack_key(plain.__class__(**{**plain.__dict__, "precision": "bf16"})) is None
    with pytest.raises(ConfigError, match="precision"):
        TrainConfig(precision="fp16")


@pytest.mark.slow
def test_the_gpu_job_runs_its_checks_on_the_cpu_at_a_tiny_size(tmp_path):
    """paper_checks/gpu_alchemy.py at --size quick on the CPU: both checks judged, a summary written."""
    import json
    import subprocess
    import sys
    from pathlib import Path
    script = Path(__file__).resolve().parents[1] / "paper_checks" / "gpu_alchemy.py"
    r = subprocess.run([sys.executable, str(script), "--out", str(tmp_path), "--size", "quick", "--device", "cpu",
                        "--workers", "1", "--freeze-points", "2", "--deadline", "400",
                        "--stone-checks", "S5", "--stone-size", "quick", "--stone-seeds", "1"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    summary = json.loads((tmp_path / "gpu_alchemy.json").read_text())
    verdicts = {x["id"]: x["verdict"] for x in summary["results"]}
    assert set(verdicts) == {"S6", "S1", "S5 (stone tokens)"} and not any(
        v.startswith(("error", "not run", "stopped")) for v in verdicts.values()), verdicts
    assert "incomplete" not in verdicts["S1"] and (tmp_path / "results").is_dir()
    # the stone-token runs are stored as that variation, beside the S1/S6 runs in the same store
    formats = [json.loads(p.read_text())["input_format"] for p in (tmp_path / "store").glob("*/config.json")]
    assert formats.count("stone_states") == 4 and formats.count(None) == len(formats) - 4 > 0, formats  # None: 4 tokens


def test_the_authors_held_out_chemistries():
    """Their rule at seed 0: 1,371 / 165 complete chemistries, 20 shared with ours. The first ten
    held-out ids were matched, transition text for transition text, to the episodes of the authors'
    published validation file. Independently of the mapping: each held-out chemistry, read through
    the plain nesting of their id with their direction index reversed, has the same transitions as
    ours once the colour names red and blue are swapped."""
    import random
    from critwin.empirical.tasks.alchemy_chemistry import (COMPLETE_GRAPH, Chemistry, authors_split,
                                                           split_chemistries)
    train, test = authors_split(0)
    assert (len(train), len(test)) == (1371, 165) and not set(train) & set(test)
    assert sorted(c.id for c in test)[:10] == [3, 2181, 2183, 3491, 5235, 6542, 6976, 7413, 7850, 10029]
    assert len(set(test) & set(split_chemistries(0)[1])) == 20
    ids = [str(i) for i in range(167424)] + ["_metadata"]
    random.Random(0).shuffle(ids)
    theirs = sorted(int(i) for i in ids[:16742] if i != "_metadata" and (int(i) // 4) % 109 == COMPLETE_GRAPH)
    rev = lambda b: ((b & 1) << 2) | (b & 2) | ((b >> 2) & 1)       # noqa: E731
    swap = {"red": "blue", "blue": "red"}

    def text(c, swapped=False):
        lines = [c.transition_text(s, p, e) for s, p, e in c.transitions()]
        if swapped:
            lines = [" ".join(swap.get(w.strip(","), w.strip(",")) + ("," if w.endswith(",") else "") for w in ln.split())
                     for ln in lines]
        return sorted(lines)
    ours = {text(c).__repr__(): c for c in test}
    plain = 0
    for n in theirs[::20]:
        pm, rest = divmod(n, 8 * 109 * 4)
        sm, rot = rest // 4 // 109, rest % 4
        sem = Chemistry(8 * (pm // 8) + rev(pm % 8), sm, COMPLETE_GRAPH, rot)
        assert text(sem, swapped=True).__repr__() in ours
        plain += text(sem).__repr__() in ours
    assert plain < len(theirs[::20])                 # the colour names do differ
    with pytest.raises(ConfigError, match="held_out"):
        make_task("alchemy_withheld", 0, held_out="theirs")


def test_the_authors_tiny_size_is_their_smallest_encoder_under_the_same_recipe():
    """Their models.py, StoneStateClassifier configs: "tiny" = 2 encoder layers, emb 128, 4 heads, FFN 256,
    dropout 0.1. Everything else is the authors recipe."""
    from critwin.empirical.presets import ALCHEMY_SIZES
    tiny, full = ALCHEMY_SIZES["authors_tiny"], ALCHEMY_SIZES["authors"]
    assert {k: v for k, v in tiny.items() if k not in ("d", "layers")} == \
        {k: v for k, v in full.items() if k not in ("d", "layers")}
    cfg = config_from_flat(alchemy_flat("authors_tiny", "withheld", epochs=1))
    m = cfg.model
    assert (m.layers, m.d, m.heads, m.d * m.mlp_ratio, m.dropout) == (2, 128, 4, 256, 0.1)
    model = Transformer(m, 25, 200, 108)
    ffn = [mod for name, mod in model.named_modules() if isinstance(mod, torch.nn.Linear) and mod.out_features == 256]
    assert len(ffn) == 2                                    # one FFN input layer per encoder layer


def _arm_config(arm: str, epochs: int = 150, extra: tuple = ()):
    from critwin.cli.main import build_parser
    from critwin.cli.train import alchemy_config
    from critwin.paper_checks.recipe_ablation import arm_command
    argv = [*arm_command(arm, "authors", epochs, 0, "cpu", "/tmp/unused")[3:], *extra]
    return alchemy_config(build_parser(argv).parse_args(argv))


def test_each_ablation_arm_puts_back_one_difference_only():
    """Parsed by the CLI's own parser, each arm's command differs from the authors' arm in the one field it
    names; the authors' arm with the long run's checkpoints is the long run the repository exports (runs_authors)."""
    from dataclasses import asdict
    from pathlib import Path
    from critwin.paper_checks.recipe_ablation import ARMS

    def flat(cfg):
        d = asdict(cfg)
        model = d.pop("model")
        return {**d, **{"model." + k: v for k, v in model.items()}}
    base = flat(_arm_config("authors"))
    changed = {arm: {k for k, v in flat(_arm_config(arm)).items() if v != base[k]} for arm in ARMS}
    assert changed["authors"] == set()
    assert changed["init N(0, 1/fan_in)"] == {"model.init"}
    assert changed["layers drawn independently"] == {"model.layer_init"}
    assert changed["betas 0.9 0.98"] == {"betas"}
    assert "wd_windows" in changed["no decay"] and not flat(_arm_config("no decay"))["wd_windows"]
    assert changed["no decay"] <= {"wd_windows", "decay_set"}
    assert changed["cosine lr"] == {"lr_schedule"} and changed["query closed by <io>"] == {"query_end"}
    assert changed["their held-out split"] == {"held_out"}
    import pandas as pd
    index = Path(__file__).resolve().parents[1] / "paper_checks" / "reports" / "alchemy_authors" / "runs_authors"
    runs = pd.read_csv(index / "run_index.csv").set_index("run_id")
    kept = ("--checkpoints", *(str(3430 * k) for k in range(1, 15)))
    long_run = runs.loc[_arm_config("authors", extra=kept).run_id()]    # the exported long run, seed 0
    assert (long_run.status, long_run.freeze, long_run.epochs_done) == ("complete", "none", 150.0)
    assert pd.isna(long_run.branch)


def test_an_arm_paused_early_keeps_the_long_runs_schedule():
    """An arm trained for fewer epochs than its horizon is the horizon's run paused (same config, so the cosine
    arm's lr at epoch 30 is that of a 150-epoch run, not of one annealed to zero at epoch 30)."""
    import pytest
    from critwin.paper_checks.recipe_ablation import arm_command
    cmd = arm_command("cosine lr", "authors", 30, 0, "cpu", "/tmp/unused", horizon=150)
    assert cmd[cmd.index("--epochs") + 1] == "150" and cmd[cmd.index("--stop-at-epoch") + 1] == "30"
    assert _arm_config("cosine lr", extra=("--stop-at-epoch", "30")).run_id() == _arm_config("cosine lr").run_id()
    cfg = _arm_config("cosine lr")
    assert cfg.lr_at(30 * 343) > 0.9 * cfg.lr            # a 150-epoch cosine is at 90.5% of its lr at epoch 30
    assert "--stop-at-epoch" not in arm_command("authors", "authors", 30, 0, "cpu", "/x")   # no horizon: no pause
    with pytest.raises(ValueError, match="horizon"):
        arm_command("authors", "authors", 30, 0, "cpu", "/x", horizon=20)


def test_the_ablation_table_reads_a_at_equal_epochs():
    """A@e is the evaluation at epoch e (nan past the run's end); A completes at the first of three
    evaluations in a row at or above 0.95 (epoch 5 here, counted by hand: 0.95, 0.97, 0.99)."""
    import math
    import pandas as pd
    from critwin.paper_checks.recipe_ablation import ablation_table
    a = pd.Series([0.3, 0.5, 0.96, 0.94, 0.95, 0.97, 0.99, 0.99], index=range(1, 9), dtype=float)
    short = pd.Series([0.3, 0.96, 0.97], index=[1, 2, 3], dtype=float)
    t = ablation_table({"one": a, "short": short}, [2, 4, 8]).set_index("arm")
    assert t.loc["one", "A@2"] == 0.5 and t.loc["one", "A@4"] == 0.94 and t.loc["one", "A@8"] == 0.99
    assert t.loc["one", "A completes (epoch)"] == 5
    assert math.isnan(t.loc["short", "A@8"]) and math.isnan(t.loc["short", "A completes (epoch)"])


def test_a_job_stopped_at_its_deadline_gets_sigterm_first(tmp_path):
    """run_before stops a process at the deadline with SIGTERM, so a training saves its resume state; before, it
    was killed outright (subprocess's timeout), and the GPU job's stopped arms came back with nothing."""
    import sys
    import time
    from critwin.paper_checks.deadline import run_before
    marker = tmp_path / "saved"
    child = ("import signal, sys, time, pathlib\n"
             f"def stop(*_): pathlib.Path({str(marker)!r}).write_text('state'); sys.exit(0)\n"
             "signal.signal(signal.SIGTERM, stop)\n"
             "print('ready', flush=True)\n"
             "time.sleep(60)\n")
    t0 = time.time()
    assert run_before([sys.executable, "-c", child], time.time() + 6, grace=20) == "stopped"
    assert marker.read_text() == "state" and time.time() - t0 < 20
    assert run_before([sys.executable, "-c", "pass"], time.time() + 1) == "not run"


@pytest.mark.slow
def test_the_recipe_ablation_trains_each_arm_in_its_own_store_from_outside_the_repository(tmp_path):
    """At quick size every arm's run is its own (at that size some arms equal the preset, and in one store two
    arms claimed one run), each is read back by its id, and the trainings run with the store as their working
    folder, so a repository root's critwin/ folder cannot shadow the installed package. Each arm is a run of the
    run of --ablation-horizon epochs paused at --ablation-epochs (a cosine arm trained only that long would anneal to
    zero by then)."""
    import json
    import subprocess
    import sys
    from pathlib import Path
    script = Path(__file__).resolve().parents[1] / "paper_checks" / "gpu_alchemy.py"
    r = subprocess.run([sys.executable, str(script), "--out", str(tmp_path / "out"), "--size", "quick", "--device",
                        "cpu", "--workers", "2", "--checks", "--ablation-epochs", "5", "--ablation-horizon", "8",
                        "--deadline", "300"],
                       capture_output=True, text=True, timeout=400, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = json.loads((tmp_path / "out" / "gpu_alchemy.json").read_text())["ablation"]
    assert len(rows) == 8 and all(row["status"].startswith("paused at epoch 5 of 8") for row in rows), rows
    assert all(row["A@5"] == row["A@5"] for row in rows)                   # read back: not nan
    import pandas as pd
    curves = pd.read_csv(tmp_path / "out" / "ablation_curves.csv")                # every arm's held-out curves
    assert set(curves.arm) == {row["arm"] for row in rows}
    assert {"event_a", "p_b_given_a", "p_c_given_ab"} <= set(curves.metric) and curves.epoch.max() == 5
    stores = sorted(p.name for p in (tmp_path / "out" / "store").iterdir())
    assert len(stores) == 8 and all(len(list((tmp_path / "out" / "store" / s).glob(".resume-*.pt"))) == 1
                                    for s in stores)      # each arm's own run, paused with its resume state


def test_the_ablation_trains_chosen_arms_at_several_seeds_each_in_its_own_folder(tmp_path):
    """--ablation-arms and --ablation-seeds: one run per (arm, seed), each read back under its own label; seed 0
    keeps the folder and label it always had, so earlier outputs stay readable."""
    import json
    import subprocess
    import sys
    from pathlib import Path
    from critwin.paper_checks.recipe_ablation import arm_label, arm_store
    assert arm_store("s", "cosine lr") == Path("s/cosine_lr") and arm_store("s", "cosine lr", 2) == Path("s/cosine_lr_seed2")
    script = Path(__file__).resolve().parents[1] / "paper_checks" / "gpu_alchemy.py"
    r = subprocess.run([sys.executable, str(script), "--out", str(tmp_path / "out"), "--size", "quick", "--device",
                        "cpu", "--workers", "2", "--checks", "--ablation-epochs", "5", "--ablation-horizon", "5",
                        "--ablation-arms", "authors", "--ablation-seeds", "0", "1", "--deadline", "300"],
                       capture_output=True, text=True, timeout=400, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    rows = json.loads((tmp_path / "out" / "gpu_alchemy.json").read_text())["ablation"]
    assert [row["arm"] for row in rows] == ["authors", arm_label("authors", 1)] == ["authors", "authors (seed 1)"]
    assert all(row["status"] == "complete" for row in rows)
    ids = {json.loads(p.read_text())["seed"] for p in (tmp_path / "out" / "store").glob("*/*/config.json")}
    assert ids == {0, 1}
