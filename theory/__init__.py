"""Theory of critical windows: derivation, rate equations, flows, predicted windows.

Pure math (numpy, scipy, sympy); never imports torch or ``critwin.empirical``.
"""
from .basin import basin, paper_bound
from .derive import derive
from ..errors import ConfigError
from .flow import integrate_flow
from .laws import compare_laws, escape_times
from .optimizers import run_discrete
from .rates import compute_rates
from .reduced import crossing_times, simulate_reduced
from ..schedules import Schedule
from .setting import StylisedSetting, build_problem
from .stylised import init_params
from .windows import budget_comparison, onset_sweep, predict, simulate

__all__ = ["ConfigError", "Schedule", "StylisedSetting", "basin", "budget_comparison",
           "build_problem", "compare_laws", "compute_rates", "crossing_times", "derive",
           "escape_times", "init_params", "integrate_flow", "onset_sweep", "paper_bound",
           "predict", "run_discrete", "simulate", "simulate_reduced"]
