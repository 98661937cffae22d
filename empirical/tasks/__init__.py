"""Task generators: deterministic integer-token splits from a task seed."""
from ...errors import ConfigError
from .anchor_permutation import PermutationAnchorTask
from .anchor_shift import ShiftAnchorTask
from .base import Split, TaskData

TASKS = {"anchor_permutation": PermutationAnchorTask, "anchor_shift": ShiftAnchorTask}


def make_task(name: str, seed: int = 0):
    if name not in TASKS:
        raise ConfigError("task", name, "one of " + ", ".join(TASKS))
    return TASKS[name](seed=seed)


__all__ = ["TASKS", "PermutationAnchorTask", "ShiftAnchorTask", "Split", "TaskData", "make_task"]
