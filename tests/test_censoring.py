"""Censored stages in the stage verdicts: a stage not reached by the end of a run is censored at the epoch the
run reached, and a row that needs it reads "inconclusive (censored at epoch E of the protocol's N (P%))".
Checked against hand-made curves and hand-computed epochs."""
import numpy as np
import pandas as pd
import pytest

from critwin.empirical.metrics.stages import stage_timing
from critwin.empirical import Run, RunStore
from critwin.empirical.presets import PAPER_EPOCHS
from critwin.paper_checks import CHECKS
from critwin.paper_checks.alchemy_checks import steps_per_epoch_of
from critwin.paper_checks.base import censored_text, row_verdict, verdict

STEPS = np.arange(0, 3001, 100)


def test_the_censoring_text_by_hand():
    assert censored_text([150.0], 1000) == "censored at epoch 150 of the protocol's 1000 (15%)"
    assert censored_text([11.67, 11.67], 1000) == "censored at epoch 11.7 of the protocol's 1000 (1.2%)"
    assert censored_text([45.06, 150.0], 1000) == "censored at epochs 45.1-150 of the protocol's 1000 (4.5-15%)"


def test_a_stage_timing_carries_its_censoring():
    curve = np.where(STEPS >= 700, 0.96, 0.3)
    done = stage_timing(STEPS, curve, "event_a", 50.0, 1000)
    assert (done["step"], done["epoch"], done["censored"]) == (700.0, 14.0, False)
    never = stage_timing(STEPS, np.full(len(STEPS), 0.94), "event_a", 50.0, 1000, reached=3430)
    assert never["censored"] and np.isnan(never["step"])
    assert (never["step_reached"], never["epoch_reached"], never["protocol_epochs"]) == (3430.0, 68.6, 1000)
    # a stage that completes two evaluations before the end is still censored (three in a row are needed)
    late = stage_timing(STEPS, np.where(STEPS >= 2900, 0.99, 0.1), "event_a", 100.0, 1000)
    assert late["censored"] and late["epoch_reached"] == 30.0


def _row(measured, paper, censored=None, sd=0.0, n=1):
    r = {"value": "x", "paper": paper, "measured": measured, "sd": sd, "n": n, "tolerance": 0.1}
    if censored:
        r["censored"] = {"epochs": censored, "protocol_epochs": 1000, "text": censored_text(censored, 1000)}
    return r


def test_a_censored_row_is_judged_neither_way():
    passing, failing = _row(1.0, 1.0), _row(0.0, 1.0)
    cens = _row(float("nan"), 1.0, [150.0])
    assert verdict([passing, cens], 0.1) == "inconclusive (censored at epoch 150 of the protocol's 1000 (15%))"
    assert verdict([failing, cens], 0.1).startswith("not reproduced (and 1 of 2 judged rows censored at epoch 150")
    assert verdict([passing], 0.1) == "reproduced"
    # a censored row whose runs so far would fail is still not a failure: the stage may come later
    assert verdict([_row(0.0, 1.0, [35.0])], 0.1).startswith("inconclusive (censored at epoch 35")
    assert row_verdict(cens, 0.1) == "inconclusive (censored at epoch 150 of the protocol's 1000 (15%))"
    assert row_verdict(failing, 0.1) == "not reproduced" and row_verdict(_row(1.0, None), 0.1) is None


def _save(store, cfg, curves):
    rows = [(int(s), "test", m, float(v)) for m, c in curves.items() for s, v in zip(STEPS, c)]
    store.save(Run(cfg.resolved(), pd.DataFrame(rows, columns=["step", "split", "metric", "value"]),
                   {"status": "complete", "final": {}}, {}))


def _withheld(t_a, t_cab, t_ba):
    r = lambda t, lo: np.where(STEPS >= t, 1.0, lo) if t is not None else np.full(len(STEPS), lo)  # noqa: E731
    ba = np.where(STEPS >= (t_ba if t_ba is not None else 10 ** 9), 0.97, np.where(STEPS >= t_a, 0.36, 0.5))
    return {"event_a": r(t_a, 0.2), "p_c_given_ab": r(t_cab, 0.3), "p_b_given_a": ba,
            "event_b": r(t_ba, 0.1), "event_c": r(t_ba, 0.05)}


@pytest.mark.parametrize("stages,order,censored", [
    ((300, 600, None), None, True),        # A and C|AB complete, B|A not yet: the order waits for B|A
    ((300, None, 1500), 0.0, False),       # B|A before C|AB, which has not come: out of order already
    ((300, 600, 1500), 1.0, False),
])
def test_s1s_order_row_is_censored_only_while_the_order_is_undecided(tmp_path, stages, order, censored):
    store = RunStore(tmp_path)
    cfgs = CHECKS["S1"].configs("cpu")
    for cfg in cfgs.values():
        _save(store, cfg, _withheld(*stages))
    res = CHECKS["S1"].run("cpu", store, train=False)
    rows = {r["value"]: r for r in res["rows"]}
    row = rows["order: A and C|AB before B|A (fraction of seeds)"]
    cfg = next(iter(cfgs.values()))
    epoch_end = cfg.steps / steps_per_epoch_of(cfg)           # the run's length in passes over its training set
    if censored:
        assert np.isnan(row["measured"]) and row["censored"]["runs"] == 3
        assert row["censored"]["epochs"] == pytest.approx([epoch_end] * 3)
        text = censored_text([epoch_end], PAPER_EPOCHS)
        assert row["row_verdict"] == f"inconclusive ({text})" and res["verdict"].startswith(f"inconclusive ({text})")
    else:
        assert row["measured"] == order and "censored" not in row
    timing = res["stage_timings"][cfg.run_id()]["p_b_given_a"]
    assert timing["censored"] == (stages[2] is None) and timing["protocol_epochs"] == PAPER_EPOCHS
    assert timing["epoch_reached"] == pytest.approx(epoch_end)
