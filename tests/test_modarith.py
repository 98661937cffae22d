"""Modular addition: every pair once across the splits, targets recomputed, determinism."""
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from critwin.bridge.cli import main
from critwin.empirical.tasks import make_task
from critwin.empirical.tasks.modarith import ModularAdditionTask
from critwin.errors import ConfigError


@settings(max_examples=40, deadline=None)
@given(st.integers(5, 40), st.floats(0.1, 0.9), st.integers(0, 10_000))
def test_every_pair_once_and_targets_recomputed(p, frac, seed):
    data = ModularAdditionTask(p, frac, seed).generate()
    tr, te = data.splits["train"], data.splits["test"]
    pairs = [tuple(x) for s in (tr, te) for x in s.inputs[:, :2]]
    assert sorted(pairs) == [(a, b) for a in range(p) for b in range(p)]          # each pair exactly once
    assert len(tr) == round(frac * p * p)
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
