"""The regime map of the reduced model."""
import numpy as np
import pytest

from critwin.errors import ConfigError
from critwin.theory import StylisedSetting, onset_sweep
from critwin.theory.regimes import classify, regime_map


def test_classify_by_hand():
    assert classify(0.2, [0.21, 0.22, 0.2]) == "none"
    assert classify(0.2, [0.8, 0.82, 0.81]) == "uniform"
    assert classify(0.2, [0.3, 0.7, 0.4]) == "window"
    assert classify(0.2, [0.3, 0.45, 0.4]) == "graded"


def test_map_at_the_settings_own_gain_equals_its_onset_sweep():
    """At G / mu_m of the setting itself and the budget of a 4e-3 x 333 window, the map's
    onset range is the reduced onset sweep's (computed through predict's path)."""
    s = StylisedSetting(d=16, keys=6, anchors=5, train_pairs=15, eta=1e-2)
    total, width, wd = 2000, 500, 1.5
    from critwin.theory import compute_rates
    r = compute_rates(s)
    m = regime_map(s, [r.gain / r.mu_m], [wd * width * s.eta], width, total)
    sw = onset_sweep(s, s.gamma, m["onsets"], width, wd, total, "reduced")
    assert m["onset_range"][0, 0] == pytest.approx(np.ptp(sw["fraction"][0]), abs=1e-6)
    assert m["regime"][0, 0] == classify(sw["baseline"][0], sw["fraction"][0])


@pytest.mark.parametrize("kw,field", [({"gain_ratios": [0.0]}, "gain_ratios"), ({"budgets": [-1]}, "budgets"),
                                      ({"width": 30000}, "width")])
def test_bad_grid_names_the_field(kw, field):
    args = {"gain_ratios": [1.0], "budgets": [1.0], **kw}
    with pytest.raises(ConfigError, match=field):
        regime_map(StylisedSetting(d=8, keys=4, anchors=4, train_pairs=10), **args)
