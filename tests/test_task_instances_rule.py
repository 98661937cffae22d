"""The registered seed-or-task-instance rule (paper_checks/reports/alchemy_authors/task_instances.py) on
hand-made outcomes: each verdict is reachable, a mixed seed decides early, and the interval is the exact one."""
import importlib.util
from pathlib import Path

import pytest
from scipy.optimize import brentq
from scipy.stats import binom

ROOT = Path(__file__).resolve().parents[1]


def _mod():
    spec = importlib.util.spec_from_file_location("ti", ROOT / "paper_checks/reports/alchemy_authors/task_instances.py")
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def _result(m, outcome):      # (task, seed) -> step or None, as S4's result row stores it
    keys = sorted(outcome)
    return {"rows": [{"value": m.ROW, "task_seed": [k[0] for k in keys], "seed": [k[1] for k in keys],
                      "per_seed": [float("nan") if outcome[k] is None else outcome[k] for k in keys]}]}


def test_one_outcome_per_seed_on_every_instance_is_rule_one():
    m = _mod()
    runs, _ = m.outcomes(_result(m, {(t, s): 6174 if s == 2 else None for t in range(3) for s in range(3)}))
    assert runs[(1, 2)] == pytest.approx(18.0) and runs[(1, 0)] is None
    verdict, lines = m.judge(runs)
    assert "rule 1" in verdict
    # 3 of 9: the exact 90% interval, solved here from the binomial tails (P(X >= 3) = 0.05 and P(X <= 3) = 0.05)
    lo = brentq(lambda p: binom.sf(2, 9, p) - 0.05, 1e-9, 1 - 1e-9)
    hi = brentq(lambda p: binom.cdf(3, 9, p) - 0.05, 1e-9, 1 - 1e-9)
    assert "3 of 9" in lines[0] and f"{lo:.2f}-{hi:.2f}" in lines[0]


def test_a_seed_that_differs_between_instances_is_rule_two_even_before_all_runs_are_in():
    m = _mod()
    out = {(0, 0): None, (0, 1): None, (0, 2): 6174, (1, 0): 3430}
    assert "rule 2" in m.judge(m.outcomes(_result(m, out))[0])[0] and "[0]" in m.judge(m.outcomes(_result(m, out))[0])[0]
    out[(1, 0)] = None
    assert m.judge(m.outcomes(_result(m, out))[0])[0].startswith("undecided so far (4 of 9")


def test_a_run_still_training_that_has_not_reached_is_left_out_not_counted_as_a_stall():
    m = _mod()
    res = _result(m, {(0, 0): None, (0, 1): 3430, (0, 2): None})
    res["rows"][0]["training"] = [False, True, True]      # (0, 1) reached while training; (0, 2) not yet
    runs, open_ = m.outcomes(res)
    assert open_ == [(0, 2)] and runs == {(0, 0): None, (0, 1): pytest.approx(10.0)}
    assert "1 of 2 runs" in m.judge(runs)[1][0]
