import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from critwin.theory import ConfigError, Schedule, compute_rates, simulate_reduced
from critwin.schedules import parse_window


@settings(max_examples=50, deadline=None)
@given(st.sampled_from(["early", "middle", "late"]), st.sampled_from(["early", "middle", "late"]),
       st.floats(0.1, 100), st.integers(1, 1000), st.integers(1000, 50000))
def test_budget_matched_have_equal_integral(a, b, budget, width, total):
    sa = Schedule.budget_matched(a, budget, width, total)
    sb = Schedule.budget_matched(b, budget, width, total)
    assert sa.integral() == pytest.approx(budget) and sb.integral() == pytest.approx(budget)
    assert all(0 <= w[0] <= w[1] <= total for w in sa.windows)


def test_values_and_edges():
    s = Schedule(100, ((10, 20, 0.5), (50, 60, 1.0)))
    assert s.value(9) == 0 and s.value(10) == 0.5 and s.value(19.999) == 0.5 and s.value(20) == 0
    assert s.breakpoints() == [0, 10, 20, 50, 60, 100]
    assert s.integral() == pytest.approx(15.0)
    assert [seg[2] for seg in s.segments()] == [0, 0.5, 0, 1.0, 0]


@pytest.mark.parametrize("build", [
    lambda: Schedule.window(500, 400, 1e-3, 1000),      # ends before it starts
    lambda: Schedule.window(900, 1200, 1e-3, 1000),     # outside training
    lambda: Schedule.window(-5, 10, 1e-3, 1000),
    lambda: Schedule(1000, ((0, 500, 1e-3), (400, 800, 1e-3))),  # overlap
    lambda: Schedule.window(0, 10, -1, 1000),
    lambda: Schedule.budget_matched("middle-ish", 20, 100, 1000),
    lambda: Schedule.budget_matched("early", 20, 2000, 1000),
    lambda: parse_window("5000-10000"),
])
def test_bad_schedule_is_rejected_with_field(build):
    with pytest.raises(ConfigError) as e:
        build()
    assert e.value.field in {"wd_window", "wd", "budget_placement", "width"}
