"""Alchemy tasks: counts per chemistry, answers recomputed from the chemistry, events, encoding."""
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from critwin.empirical.tasks.alchemy import (
    N_CLASSES, TOKEN, VOCAB, AlchemyTask, make_episode, self_avoiding_paths, stone_class)
from critwin.empirical.tasks.alchemy_chemistry import Chemistry, corner, inverse_potion
from critwin.errors import ConfigError

complete = st.builds(Chemistry, st.integers(0, 47), st.integers(0, 7), st.just(0), st.integers(0, 3))
seeds = st.integers(0, 2**31 - 1)


def _run(chem, start, potions):
    s = start
    for p in potions:
        s = chem.apply(s, p)
    return s


def test_vocabulary_is_the_papers():
    assert len(VOCAB) == 25 and VOCAB[:4] == ("-1", "-3", "1", "3") and VOCAB[-6:][0] == "<pad>"
    assert TOKEN["CYAN"] == 4 and TOKEN["small"] == 18 and TOKEN["<unk>"] == 24


@settings(max_examples=25, deadline=None)
@given(complete, seeds)
def test_withheld_support_and_queries(chem, seed):
    ep = make_episode(chem, "withheld", None, np.random.default_rng(seed))
    assert len(ep.support) == 16 and len(ep.queries) == 8
    assert not {p for _, ps, _ in ep.support for p in ps} & set(ep.withheld)      # no query potion in support
    for q in ep.queries:
        assert q.potions[0] in ep.withheld and _run(chem, q.start, q.potions) == q.end
        assert q.end in q.face and len(q.face) == 4
        assert all(s[chem.latent_potion(q.potions[0])[0]] == chem.latent_potion(q.potions[0])[1] for s in q.face)


@settings(max_examples=15, deadline=None)
@given(complete, seeds, st.sampled_from([2, 3, 4, 5]))
def test_composition_queries_are_balanced_self_avoiding_paths(chem, seed, hops):
    ep = make_episode(chem, "composition", hops, np.random.default_rng(seed))
    assert len(ep.support) == 24 and len(ep.queries) == 48
    for i in range(8):
        qs = [q for q in ep.queries if q.start == corner(i)]
        assert len(qs) == 6 and len({q.potions for q in qs}) == 6
        counts = Counter(q.end for q in qs)
        assert max(counts.values()) - min(counts.values()) <= 1 or len(counts) == len(qs[0].reachable)
        for q in qs:
            stones = [q.start]
            for p in q.potions:
                stones.append(chem.apply(stones[-1], p))
            assert len(set(stones)) == hops + 1 and stones[-1] == q.end and q.end in q.reachable


@pytest.mark.parametrize("hops,count", [(2, 48), (3, 96), (4, 144), (5, 240)])
def test_decomposition_support_counts(hops, count):
    chem = Chemistry(11, 3, 0, 2)
    ep = make_episode(chem, "decomposition", hops, np.random.default_rng(0))
    assert len(ep.support) == count and len(ep.queries) == 24
    assert len(set(ep.support)) == count
    assert all(_run(chem, s, ps) == e for s, ps, e in ep.support)
    # brute force: every potion word of length h from every stone that moves at each step without revisits
    import itertools
    from critwin.empirical.tasks.alchemy_chemistry import POTIONS
    brute = 0
    for i in range(8):
        for word in itertools.product(POTIONS, repeat=hops):
            path = [corner(i)]
            for p in word:
                path.append(chem.apply(path[-1], p))
            brute += len(set(path)) == hops + 1
    assert brute == count


def test_split_arrays_encode_support_then_query():
    data = AlchemyTask("withheld", seed=1, max_chemistries=3).generate()
    tr = data.splits["train"]
    assert tr.inputs.shape == (24, 16 * 11 + 6) and data.vocab_size == 25
    assert (tr.inputs[:, -1] == TOKEN["<io>"]).all() and (tr.extra["lengths"] == tr.inputs.shape[1]).all()
    assert ((0 <= tr.targets) & (tr.targets < N_CLASSES)).all()
    for i in range(len(tr.targets)):
        assert tr.targets[i] in tr.extra["chemistry_stones"][i]                 # event A holds for the answer
        assert tr.targets[i] in tr.extra["event_b"][i]                          # and event B
    eps = AlchemyTask("withheld", seed=1, max_chemistries=3).episodes()["train"]
    q = eps[0].queries[0]
    assert tr.targets[0] == stone_class(eps[0].chemistry, q.end)
    again = AlchemyTask("withheld", seed=1, max_chemistries=3).generate().splits["train"]
    np.testing.assert_array_equal(tr.inputs, again.inputs)
    other = AlchemyTask("withheld", seed=2, max_chemistries=3).generate()
    assert not set(other.info["chemistries"]["train"]) == set(data.info["chemistries"]["train"])
    assert not set(data.info["chemistries"]["train"]) & set(data.info["chemistries"]["test"])


@pytest.mark.parametrize("kw,field", [({"variant": "withheld", "hops": 2}, "hops"),
                                      ({"variant": "composition", "hops": 6}, "hops"),
                                      ({"variant": "composition"}, "hops"), ({"variant": "mixing"}, "task"),
                                      ({"variant": "withheld", "max_chemistries": -2}, "chemistries")])
def test_bad_task_options_name_the_field(kw, field):
    with pytest.raises(ConfigError, match=field):
        AlchemyTask(**kw)


def test_inverse_potions_in_paths():
    chem = Chemistry(3, 1, 0, 0)
    for p, e in self_avoiding_paths(chem, corner(0), 2):
        back = _run(chem, e, [inverse_potion(x) for x in reversed(p)])
        assert back == corner(0)


def test_events_against_a_hand_computation():
    from critwin.empirical.metrics.evaluate import alchemy_events
    from critwin.empirical.tasks.base import Split
    stones = np.array([[1, 2, 3, 4, 5, 6, 7, 8]] * 4)
    event_b = np.array([[1, 2, -1, -1]] * 4)
    split = Split(np.zeros((4, 3), dtype=np.int64), np.array([1, 1, 2, 1]),
                  {"chemistry_stones": stones, "event_b": event_b})
    out = alchemy_events(np.array([1, 3, 50, 2]), split)
    # A: 1, 3, 2 in the stones (3 of 4); B: 1, 2 (2 of 4); C: query 0 only
    assert out == {"event_a": 0.75, "event_b": 0.5, "event_c": 0.25, "p_b_given_a": 2 / 3, "p_c_given_ab": 0.5}


def test_padded_forward_reads_the_last_real_token():
    import torch
    from critwin.empirical.models import ModelConfig, Transformer
    torch.manual_seed(0)
    m = Transformer(ModelConfig(d=16), vocab_size=25, seq_len=12, n_out=108)
    seq = torch.randint(0, 19, (1, 7))
    padded = torch.cat([seq, torch.full((1, 5), TOKEN["<pad>"])], dim=1)
    torch.testing.assert_close(m(padded, torch.tensor([7])), m(seq))
    assert m(seq).shape == (1, 108)


def test_alchemy_trains_and_logs_event_curves(tmp_path, capsys):
    import json
    from critwin.cli.main import main
    code = main(["train", "alchemy", "--task", "withheld", "--chemistries", "4", "--steps", "20", "--eval-every",
                 "10", "--d", "16", "--store", str(tmp_path), "--no-progress", "--json"])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and d["status"] == "complete" and d["config"]["task"] == "alchemy_withheld"
    from critwin.empirical import RunStore
    m = RunStore(tmp_path).load(d["run_id"]).metrics
    assert {"event_a", "event_b", "event_c", "p_b_given_a", "p_c_given_ab"} <= set(m[m.split == "test"].metric)
    assert sorted(m.step.unique()) == [0, 10, 20]
    assert main(["train", "alchemy", "--task", "composition", "--hops", "7", "--store", str(tmp_path)]) == 2
    assert main(["train", "anchor", "--steps", "10", "--store", str(tmp_path)]) == 0     # anchor unchanged


def test_reward_ablation_splits_hide_reward_tokens():
    data = AlchemyTask("withheld", seed=0, max_chemistries=2, ablation=True).generate()
    te, q, a = (data.splits[k] for k in ("test", "test_ablate_query", "test_ablate_rewards"))
    rewards = [TOKEN[r] for r in ("-3", "-1", "1", "3")]
    n_rewards = np.isin(te.inputs, rewards).sum(axis=1)
    assert (np.isin(a.inputs, rewards).sum(axis=1) == 0).all() and (a.inputs == TOKEN["<unk>"]).sum() == n_rewards.sum()
    assert (np.isin(q.inputs, rewards).sum(axis=1) == n_rewards - 1).all()
    # the query's reward is the 4th token of the query stone: 4 + potions + <io> from the end
    pos = te.inputs.shape[1] - 1 - 1 - 1
    assert (q.inputs[:, pos] == TOKEN["<unk>"]).all() and np.isin(te.inputs[:, pos], rewards).all()
    np.testing.assert_array_equal(q.targets, te.targets)


@pytest.mark.parametrize("variant,hops,cap", [("withheld", None, 5), ("composition", 2, 3), ("decomposition", 3, None)])
def test_train_size_without_generating_matches_the_generated_split(variant, hops, cap):
    from critwin.empirical.tasks.alchemy import AlchemyTask
    t = AlchemyTask(variant, hops, 0, max_chemistries=cap)
    if cap is None:
        per = {"withheld": 8, "composition": 48, "decomposition": 24}[variant]
        assert t.train_size() == 1371 * per          # the paper's split
    else:
        assert t.train_size() == len(t.generate().splits["train"])
