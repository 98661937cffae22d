import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from critwin.empirical.tasks import PermutationAnchorTask, ShiftAnchorTask, make_task
from critwin.empirical.tasks.anchor_shift import SHIFTS
from critwin.errors import ConfigError


@st.composite
def perm_tasks(draw):
    m = draw(st.integers(2, 8))
    return PermutationAnchorTask(keys=draw(st.integers(2, 16)), anchors=m,
                                 train_pairs=draw(st.integers(-(-m // 2), m * m - 1)),
                                 seed=draw(st.integers(0, 2**20)))


# Determinism, seeds, disjoint splits, counts and targets of every task: tests/test_testing_kit.py (the kit).


def test_paper_sizes():
    d = PermutationAnchorTask().generate()
    assert (len(d.splits["train"]), len(d.splits["ood"])) == (720, 304) and d.vocab_size == 24


@settings(max_examples=60, deadline=None)
@given(perm_tasks())
def test_permutation_counts_splits_coverage_targets(t):
    d = t.generate()
    tr, ood = d.splits["train"], d.splits["ood"]
    assert len(tr) == t.train_pairs * t.keys and len(ood) == (t.anchors**2 - t.train_pairs) * t.keys
    train_pairs = {tuple(p) for p in tr.extra["pair"]}
    assert len(train_pairs) == t.train_pairs
    assert train_pairs.isdisjoint({tuple(p) for p in ood.extra["pair"]})
    assert set(np.unique(tr.extra["pair"])) == set(range(t.anchors))
    perms = np.array(d.info["permutations"])
    assert all(sorted(p) == list(range(t.keys)) for p in perms)
    for split in (tr, ood):
        k, ai, aj = split.inputs.T
        assert np.all(k < t.keys) and np.all(ai >= t.keys) and np.all(aj >= t.keys)
        i, j = ai - t.keys, aj - t.keys
        np.testing.assert_array_equal(split.targets, [perms[b][perms[a][kk]] for kk, a, b in zip(k, i, j)])


def _shift_label(row):
    """Recompute the label from the sequence alone."""
    pos = [i for i, tok in enumerate(row) if 1 <= tok <= 4]
    p = pos[0] - 1
    x, a1, a2 = row[p], row[p + 1], row[p + 2]
    return x, a1, a2, p


@settings(max_examples=8, deadline=None)
@given(st.integers(0, 2**20), st.integers(2, 12))
def test_shift_counts_splits_targets(seed, m):
    t = ShiftAnchorTask(seed=seed, id_modulus=m)
    d = t.generate()
    tr, idt, ood = d.splits["train"], d.splits["id_test"], d.splits["ood"]
    assert len(tr) + len(idt) == 15 * 80 * 7 and len(ood) == 80 * 7
    assert d.vocab_size == 201 and d.seq_len == 9
    for split, is_id in ((tr, False), (idt, True)):
        for row, y in zip(split.inputs[::37], split.targets[::37]):
            x, a1, a2, p = _shift_label(row)
            assert ((x % m) == p) == is_id
            assert (a1, a2) != (4, 3)
            expect = x - 6 if (a1, a2) == (3, 4) else x + SHIFTS[a1] + SHIFTS[a2]
            assert y == expect
            assert all(20 <= tok <= 99 for i, tok in enumerate(row) if i not in (p, p + 1, p + 2))
    for row, y, sym in zip(ood.inputs, ood.targets, ood.extra["symmetric_target"]):
        x, a1, a2, _ = _shift_label(row)
        assert (a1, a2) == (4, 3) and y == x - 10 and sym == x - 6
    # every training anchor pair except the held-out one appears
    assert {tuple(p) for p in tr.extra["pair"]} == {(a, b) for a in SHIFTS for b in SHIFTS} - {(4, 3)}


@pytest.mark.parametrize("build,field", [
    (lambda: PermutationAnchorTask(train_pairs=64), "train_pairs"),
    (lambda: PermutationAnchorTask(train_pairs=3), "train_pairs"),
    (lambda: PermutationAnchorTask(keys=1), "keys"),
    (lambda: ShiftAnchorTask(id_modulus=1), "id_modulus"),
    (lambda: make_task("anchor_rotation"), "task"),
])
def test_bad_task_input(build, field):
    with pytest.raises(ConfigError) as e:
        build()
    assert e.value.field == field
