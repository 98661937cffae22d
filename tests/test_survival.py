"""The composition model read coordinate by coordinate: the held share, the sign-limit level 1/2 and the
left-edge rule, each against an independent computation."""
import numpy as np
import pytest
import torch

from critwin.empirical.metrics.survival import held_share
from critwin.errors import ConfigError
from critwin.theory.composition import HELD_LEVEL, sign_step_growth, survival_edge


class Toy(torch.nn.Module):
    """Two named groups whose loss 1/2 |W - T|^2 has the analytic gradient W - T."""

    def __init__(self, seed=0):
        super().__init__()
        g = torch.Generator().manual_seed(seed)
        self.layer = torch.nn.ModuleDict({"attn": torch.nn.Linear(6, 5), "mlp": torch.nn.Linear(4, 3)})
        with torch.no_grad():
            for lin in self.layer.values():
                lin.weight.copy_(torch.randn(lin.weight.shape, generator=g))
        self.targets = {k: torch.randn(v.weight.shape, generator=g) for k, v in self.layer.items()}


def toy_loss(m):
    return sum(0.5 * ((m.layer[k].weight - m.targets[k]) ** 2).sum() for k in m.layer) + \
        sum(0.0 * m.layer[k].bias.sum() for k in m.layer)


def test_held_share_matches_a_coordinate_loop_on_an_analytic_gradient():
    m = Toy()
    lams = (0.0, 0.3, 1.0)
    got = held_share(m, toy_loss, lams)
    for grp in ("attn", "mlp"):
        w = m.layer[grp].weight.detach().double().numpy().ravel()
        g = (w - m.targets[grp].double().numpy().ravel())          # d loss / d w, by hand
        grown_mass, total = 0.0, 0.0
        held = {lam: 0.0 for lam in lams}
        for wi, gi in zip(w, g):
            total += abs(wi)
            if -gi * wi > 0:
                grown_mass += abs(wi)
                for lam in lams:
                    if -gi * wi >= lam * wi * wi:
                        held[lam] += abs(wi)
        assert got[grp]["grown"] == pytest.approx(grown_mass / total, abs=1e-12)
        for lam in lams:
            assert got[grp][lam] == pytest.approx(held[lam] / grown_mass, abs=1e-12)
        assert got[grp][0.0] == pytest.approx(1.0)


def test_the_level_one_half_is_where_a_sign_step_starts_growing_the_grown_set():
    rng = np.random.default_rng(0)
    checked = 0
    for _ in range(300):
        theta = rng.normal(size=200) * rng.uniform(0.1, 2)
        pull = rng.normal(size=200) * rng.uniform(0.01, 3) * np.abs(theta)
        lam = rng.uniform(0, 2)
        grown = pull > 0
        share = np.abs(theta)[grown & (pull >= lam * theta ** 2)].sum() / np.abs(theta)[grown].sum()
        if abs(share - HELD_LEVEL) < 0.01:
            continue                    # the second-order term decides a near tie
        assert (sign_step_growth(theta, pull, lam, lr=1e-7) > 0) == (share > HELD_LEVEL)
        checked += 1
    assert checked > 250


def test_left_edge_is_the_first_upward_crossing_after_the_plateau():
    steps = [0, 10, 20, 30, 40]
    assert survival_edge(steps, [0.7, 0.2, 0.3, 0.5, 0.9]) == pytest.approx(30.0)
    assert survival_edge(steps, [0.7, 0.2, 0.4, 0.6, 0.9]) == pytest.approx(25.0)
    assert survival_edge(steps, [0.7, 0.2, float("nan"), 0.6, 0.9]) == pytest.approx(10 + 0.3 / 0.4 * 20)
    assert survival_edge(steps, [0.7, 0.6, 0.8, 0.9, 0.9]) is None       # never held back: no crossing from below
    assert survival_edge(steps, [0.4, 0.2, 0.3, 0.45, 0.49]) is None      # never outpulled
    with pytest.raises(ConfigError, match="held"):
        survival_edge(steps, [0.1, 0.2])


def test_probe_curves():
    from critwin.bridge.survival import held_curves, mean_curves, predict_left_edges, probe_config
    from dataclasses import replace
    cfg = replace(probe_config("adamw", 0.8, 0, 0), steps=60, eval_every=60, checkpoints=(20, 40))
    c = held_curves(cfg, (4e-3, 1.6e-2))
    assert c["step"] == [0, 20, 40]
    for key in ("attn_0.004", "attn_0.016", "mlp_0.004", "attn_grown"):
        assert all(0.0 <= v <= 1.0 for v in c[key])
    # a stronger penalty holds back at least as much at every state
    assert all(a >= b for a, b in zip(c["attn_0.004"], c["attn_0.016"]))
    mean = mean_curves([c, c])
    assert mean["attn_0.004"] == pytest.approx(c["attn_0.004"])
    assert set(predict_left_edges(mean, (4e-3,))) == {4e-3}
    with pytest.raises(ConfigError, match="optimizer"):
        probe_config("rmsprop", 0.8, 0, 0)
    with pytest.raises(ConfigError, match="steps"):
        probe_config("adamw", 0.8, 0, 0, steps=5)


def test_a_shorter_probe_is_the_same_run_cut_early():
    from critwin.bridge.survival import held_curves, probe_config
    short, full = (held_curves(probe_config("adamw", 0.8, 0, 0, steps=s), (1.6e-2,)) for s in (40, 60))
    n = len(short["step"])
    assert short["step"] == full["step"][:n]
    assert short["attn_0.016"] == full["attn_0.016"][:n]
