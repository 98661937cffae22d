"""Modular addition: every pair once across the splits, targets recomputed, determinism."""
import json

import numpy as np
import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from critwin.cli.main import main
from critwin.empirical.tasks import make_task
from critwin.empirical.tasks.modarith import ModularAdditionTask
from critwin.errors import ConfigError


@settings(max_examples=40, deadline=None)
@given(st.integers(5, 40), st.floats(0.1, 0.9), st.integers(0, 10_000))
@example(25, 0.34, 0)      # 0.34 * 625 = 212.50000000000003 but (0.34 * 25) * 25 = 212.5: the count is round(frac p^2)
def test_every_pair_once_and_targets_recomputed(p, frac, seed):
    data = ModularAdditionTask(p, frac, seed).generate()
    tr, te = data.splits["train"], data.splits["test"]
    pairs = [tuple(x) for s in (tr, te) for x in s.inputs[:, :2]]
    assert sorted(pairs) == [(a, b) for a in range(p) for b in range(p)]          # each pair exactly once
    assert len(tr) == round(frac * p ** 2)          # the documented count, as the spec's float product
    for s in (tr, te):
        assert all(t == (a + b) % p for (a, b, eq), t in zip(s.inputs, s.targets)) and (s.inputs[:, 2] == p).all()
    again = ModularAdditionTask(p, frac, seed).generate().splits["train"]
    np.testing.assert_array_equal(again.inputs, tr.inputs)


def test_options_are_refused_where_they_do_not_belong():
    with pytest.raises(ConfigError, match="modulus"):
        make_task("anchor_permutation", 0, modulus=7)
    with pytest.raises(ConfigError, match="train_frac"):
        ModularAdditionTask(7, 1.0)


def test_train_modarith_records_the_grokking_step(tmp_path, capsys):
    code = main(["train", "modarith", "--p", "7", "--train-frac", "0.8", "--steps", "300", "--eval-every", "20",
                 "--batch-size", "16", "--d", "32", "--lr", "1e-2", "--store", str(tmp_path), "--no-progress", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and d["config"]["task"] == "modarith" and d["config"]["modulus"] == 7
    assert "test_reach_step" in d["summary"]
    s = d["summary"]["test_reach_step"]
    assert s is None or (s % 20 == 0 and 0 <= s <= 300)


def test_runs_summary_reads_the_grokking_step_and_censors_runs_that_never_grok(tmp_path, capsys):
    """The summary's reach step against the first test accuracy >= 0.95 in each run's own curve; a run
    cut before it counts as its last step. The default metrics exist for a store without ood_acc."""
    base = ["train", "modarith", "--p", "7", "--train-frac", "0.8", "--eval-every", "20", "--batch-size", "16",
            "--d", "32", "--store", str(tmp_path), "--no-progress", "--json"]
    for steps, lr in (("400", "1e-2"), ("40", "1e-5")):
        assert main(base + ["--steps", steps, "--lr", lr]) == 0
    capsys.readouterr()
    assert main(["runs", "summary", "--store", str(tmp_path), "--group-by", "lr", "--json"]) == 0
    rows = {r["lr"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert {"test_acc_mean", "train_acc_mean"} <= set(rows[1e-2])
    from critwin.empirical import RunStore
    for rid in RunStore(tmp_path).scan()[0]:
        run = RunStore(tmp_path).load(rid)
        m = run.metrics
        acc = m[(m.split == "test") & (m.metric == "acc")].sort_values("step")
        hit = acc[acc.value >= 0.95].step
        expect = float(hit.iloc[0]) if len(hit) else float(m.step.max())
        row = rows[run.config["lr"]]
        assert row["test_reach_step_mean"] == expect
        assert row["test_reach_step_censored"] == (0 if len(hit) else 1)
    assert rows[1e-5]["test_reach_step_censored"] == 1 and rows[1e-5]["test_reach_step_mean"] == 40.0
