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


@pytest.mark.parametrize("kw,field", [({"gain_ratios": [0.0]}, "gain_ratios"), ({"budgets": [-1]}, "budgets"),
                                      ({"width": 30000}, "width")])
def test_bad_grid_names_the_field(kw, field):
    args = {"gain_ratios": [1.0], "budgets": [1.0], **kw}
    with pytest.raises(ConfigError, match=field):
        regime_map(StylisedSetting(d=8, keys=4, anchors=4, train_pairs=10), **args)
