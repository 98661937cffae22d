"""Theory of critical windows: derivation, rate equations, flows, predicted windows.

Pure math (numpy, scipy, sympy); never imports torch or ``critwin.empirical``.
"""
from critwin.theory.basin import basin, paper_bound
from critwin.theory.derive import derive
from critwin.theory.flow import integrate_flow
from critwin.theory.laws import compare_laws, escape_times
from critwin.theory.optimizers import run_discrete
from critwin.theory.rates import compute_rates
from critwin.theory.reduced import crossing_times, simulate_reduced
from critwin.theory.setting import StylisedSetting, build_problem
from critwin.theory.stylised import init_params
from critwin.theory.windows import budget_comparison, onset_sweep, predict, simulate

from critwin.errors import ConfigError
from critwin.schedules import Schedule

__all__ = ["ConfigError", "Schedule", "StylisedSetting", "basin", "budget_comparison",
           "build_problem", "compare_laws", "compute_rates", "crossing_times", "derive",
           "escape_times", "init_params", "integrate_flow", "onset_sweep", "paper_bound",
           "predict", "run_discrete", "simulate", "simulate_reduced"]
