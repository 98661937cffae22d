"""Task generators: deterministic integer-token splits from a task seed."""
from critwin.empirical.tasks.alchemy import AlchemyTask
from critwin.empirical.tasks.anchor_permutation import PermutationAnchorTask
from critwin.empirical.tasks.anchor_shift import ShiftAnchorTask
from critwin.empirical.tasks.base import Split, TaskData
from critwin.empirical.tasks.modarith import ModularAdditionTask
from critwin.empirical.tasks.scan import ScanTask

from critwin.errors import ConfigError

TASKS = {"anchor_permutation": PermutationAnchorTask, "anchor_shift": ShiftAnchorTask,
         "alchemy_withheld": AlchemyTask, "alchemy_composition": AlchemyTask, "alchemy_decomposition": AlchemyTask,
         "modarith": ModularAdditionTask, "scan_add_prim_jump": ScanTask, "scan_length": ScanTask}
# Task options beyond the seed (config fields, None = the task's default), and who takes them.
TASK_OPTIONS = ("hops", "chemistries", "ablation", "modulus", "train_frac", "query_end", "input_format", "held_out")
_ALCHEMY = ("hops", "chemistries", "ablation", "query_end", "input_format", "held_out")
TAKES = {"alchemy_withheld": _ALCHEMY, "alchemy_composition": _ALCHEMY, "alchemy_decomposition": _ALCHEMY,
         "modarith": ("modulus", "train_frac")}


def make_task(name: str, seed: int = 0, **options):
    """A task generator by name; options a task does not take are refused, naming them."""
    if name not in TASKS:
        raise ConfigError("task", name, "one of " + ", ".join(TASKS))
    given = {k: v for k, v in options.items() if v is not None}
    for k, v in given.items():
        if k not in TAKES.get(name, ()):
            takes = ", ".join(TAKES.get(name, ())) or "none"
            raise ConfigError(k, v, f"an option of another task (task {name} takes: {takes})")
    if name.startswith("alchemy_"):
        return AlchemyTask(name[len("alchemy_"):], given.get("hops"), seed, given.get("chemistries"),
                           bool(given.get("ablation", False)), given.get("query_end", "io"),
                           given.get("input_format", "tokens"), given.get("held_out", "toolkit"))
    if name == "modarith":
        return ModularAdditionTask(given.get("modulus", 67), given.get("train_frac", 0.4), seed)
    if name.startswith("scan_"):
        return ScanTask(name[len("scan_"):], seed)
    return TASKS[name](seed=seed)


__all__ = ["TASKS", "TASK_OPTIONS", "AlchemyTask", "ModularAdditionTask", "PermutationAnchorTask", "ScanTask", "ShiftAnchorTask", "Split", "TaskData", "make_task"]
