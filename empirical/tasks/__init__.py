"""Task generators: deterministic integer-token splits from a task seed."""
from ...errors import ConfigError
from .alchemy import AlchemyTask
from .anchor_permutation import PermutationAnchorTask
from .anchor_shift import ShiftAnchorTask
from .base import Split, TaskData

TASKS = {"anchor_permutation": PermutationAnchorTask, "anchor_shift": ShiftAnchorTask,
         "alchemy_withheld": AlchemyTask, "alchemy_composition": AlchemyTask, "alchemy_decomposition": AlchemyTask}
TASK_OPTIONS = ("hops", "chemistries")      # task options beyond the seed (Alchemy only)


def make_task(name: str, seed: int = 0, hops: int | None = None, chemistries: int | None = None):
    """A task generator by name; hops and chemistries are Alchemy's options and refused elsewhere."""
    if name not in TASKS:
        raise ConfigError("task", name, "one of " + ", ".join(TASKS))
    if name.startswith("alchemy_"):
        return AlchemyTask(name[len("alchemy_"):], hops, seed, chemistries)
    for opt, v in (("hops", hops), ("chemistries", chemistries)):
        if v is not None:
            raise ConfigError(opt, v, f"an Alchemy option (task {name} has none)")
    return TASKS[name](seed=seed)


__all__ = ["TASKS", "TASK_OPTIONS", "AlchemyTask", "PermutationAnchorTask", "ShiftAnchorTask", "Split", "TaskData", "make_task"]
