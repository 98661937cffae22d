import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from critwin.theory import ConfigError, StylisedSetting, build_problem


@st.composite
def settings_(draw):
    m = draw(st.integers(2, 6))
    return StylisedSetting(d=draw(st.integers(max(m, 4), 12)), keys=draw(st.integers(2, 4)),
                           anchors=m, train_pairs=draw(st.integers(-(-m // 2), m * m)),
                           seed=draw(st.integers(0, 2**16)),
                           embeddings=draw(st.sampled_from(["orthonormal", "unit", "gaussian"])),
                           targets=draw(st.sampled_from(["teacher", "permutation"])))


@settings(max_examples=40, deadline=None)
@given(settings_())
def test_problem_counts_splits_and_coverage(s):
    p = build_problem(s)
    assert p.keys.shape == (s.d, s.keys) and p.anchors.shape == (s.d, s.anchors)
    assert len(p.pairs) == s.train_pairs and len(p.ood_pairs) == s.anchors**2 - s.train_pairs
    train = {tuple(x) for x in p.pairs}
    assert len(train) == s.train_pairs and train.isdisjoint({tuple(x) for x in p.ood_pairs})
    assert set(np.unique(p.pairs)) == set(range(s.anchors))  # every anchor is trained
    assert p.targets.shape == (s.train_pairs, s.d, s.keys)


@settings(max_examples=25, deadline=None)
@given(settings_())
def test_deterministic_under_seed(s):
    a, b = build_problem(s), build_problem(s)
    for name in ("keys", "anchors", "pairs", "ood_pairs", "targets", "ood_targets"):
        np.testing.assert_array_equal(getattr(a, name), getattr(b, name))


@settings(max_examples=25, deadline=None)
@given(settings_())
def test_permutation_targets_are_composed_keys(s):
    p = build_problem(s.with_(targets="permutation"))
    for (i, j), Y in zip(p.pairs, p.targets):
        # every target column is some key, and the map k -> target is a permutation
        idx = [int(np.argmin(np.linalg.norm(p.keys - Y[:, [k]], axis=0))) for k in range(s.keys)]
        np.testing.assert_allclose(Y, p.keys[:, idx], atol=1e-12)
        assert sorted(idx) == list(range(s.keys))


def test_permutation_targets_compose():
    """pi_j(pi_i(k)): (i, i) pairs and chained pairs agree with one permutation per anchor."""
    s = StylisedSetting(d=16, keys=8, anchors=4, train_pairs=16, targets="permutation", seed=5)
    p = build_problem(s)
    key_of = lambda col: int(np.argmax(p.keys.T @ col))  # noqa: E731  (orthonormal keys)
    maps = {(int(i), int(j)): [key_of(Y[:, k]) for k in range(s.keys)] for (i, j), Y in zip(p.pairs, p.targets)}
    rng = np.random.default_rng(np.random.SeedSequence(5).spawn(4)[3])
    perms = [rng.permutation(s.keys) for _ in range(4)]
    for (i, j), mapped in maps.items():
        assert mapped == [int(perms[j][perms[i][k]]) for k in range(s.keys)]


def test_teacher_targets_are_a_shared_path():
    s = StylisedSetting(d=12, keys=4, anchors=3, train_pairs=9, seed=1)
    p = build_problem(s)
    # all targets are scalar multiples of one d x K matrix
    flat = p.targets.reshape(len(p.targets), -1)
    assert np.linalg.matrix_rank(flat, tol=1e-10) == 1


@pytest.mark.parametrize("field,kwargs", [
    ("gamma", {"gamma": 0.0}), ("gamma", {"gamma": -1.0}), ("delta", {"delta": 0.0}),
    ("delta", {"delta": 0.7}), ("train_pairs", {"train_pairs": 65}), ("eta", {"eta": 0}),
    ("embeddings", {"embeddings": "sparse"}), ("loss_norm", {"loss_norm": "avg"}),
    ("d", {"d": 0}), ("keys", {"keys": 2.5}), ("targets", {"targets": "x"}),
])
def test_bad_setting_names_the_field(field, kwargs):
    with pytest.raises(ConfigError) as e:
        StylisedSetting(**kwargs)
    assert e.value.field == field and field in str(e.value)
