"""The task-generator testing kit (`critwin.empirical.testing`), importable as critwin.testing."""
from .empirical.testing import (INVARIANTS, InvariantResult, KitReport, KitSpec, assert_task, check_task, seeds,
                                split_rows, task_kit)

__all__ = ["INVARIANTS", "InvariantResult", "KitReport", "KitSpec", "assert_task", "check_task", "seeds",
           "split_rows", "task_kit"]
