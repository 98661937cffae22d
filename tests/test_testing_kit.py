"""The task-generator testing kit on the project's tasks, on a user's generator and on a broken one."""
import contextlib
import io
import json
import re
import sys
import types
from pathlib import Path

import pytest
from hypothesis import strategies as st

from critwin.cli.main import main
from critwin.empirical.tasks import AlchemyTask, ModularAdditionTask, PermutationAnchorTask, ShiftAnchorTask
from critwin.testing import KitSpec, assert_task, check_task



def _readme_blocks() -> tuple[str, str]:
    """The kit guide's example (docs/testing_kit.md): its code and the output it says the code prints."""
    readme = (Path(__file__).resolve().parents[1] / "docs" / "testing_kit.md").read_text()
    section = readme[readme.index("# Property-testing a task generator"):]
    code, printed = re.findall(r"```(?:python)?\n(.*?)```", section, re.S)[:2]
    return code, printed


@pytest.fixture(scope="module")
def readme_example():
    """The kit guide's example, run once, as an importable module (the CLI takes module:callable)
    with what it printed; `leaky_sum_task` is its SumTask with the bug switched on."""
    code, _ = _readme_blocks()
    mod = types.ModuleType("readme_kit_example")
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(code, "README.md", "exec"), mod.__dict__)
    mod.printed = out.getvalue()
    mod.leaky_sum_task = lambda seed=0: mod.SumTask(seed, leaky=True)
    sys.modules[mod.__name__] = mod
    yield mod
    del sys.modules[mod.__name__]


def test_the_project_tasks_pass_every_declared_invariant():
    for factory, params, n in (
            (PermutationAnchorTask, {"seed": st.integers(0, 2**16), "anchors": st.integers(2, 9),
                                     "keys": st.integers(2, 12), "train_pairs": st.integers(1, 80)}, 25),
            (ShiftAnchorTask, None, 5),
            (ModularAdditionTask, {"seed": st.integers(0, 999), "p": st.integers(2, 40),
                                   "train_frac": st.floats(0.05, 0.95)}, 25),
            (lambda seed: AlchemyTask("withheld", None, seed, 4, True), None, 3),
            (lambda seed: AlchemyTask("composition", 3, seed, 2), None, 2),
            (lambda seed: AlchemyTask("decomposition", 2, seed, 2), None, 2)):
        report = assert_task(factory, params, examples=n)
        assert not [r for r in report.results if r.status == "failed"]
    from critwin.empirical.tasks.scan import ScanTask, interpret
    for split in ("add_prim_jump", "length"):           # sequence targets: counts, oracle, disjoint commands
        report = assert_task(lambda seed: ScanTask(split, seed), examples=2)
        assert {r.name for r in report.results if r.status == "passed"} >= {"targets_by_oracle", "declared_counts",
                                                                            "splits_disjoint"}
    assert interpret("jump around left twice after turn opposite right") == \
        ["I_TURN_RIGHT"] * 2 + ["I_TURN_LEFT", "I_JUMP"] * 8
    statuses = {r.name: r.status for r in check_task(PermutationAnchorTask, examples=3).results}
    assert statuses["targets_by_oracle"] == statuses["splits_disjoint"] == statuses["declared_counts"] == "passed"


def test_a_leaking_split_is_caught_and_shrunk_to_the_smallest_seed(readme_example):
    SumTask = readme_example.SumTask
    report = check_task(lambda seed: SumTask(seed, leaky=True), examples=60)
    bad = {r.name: r for r in report.results if r.status == "failed"}
    assert set(bad) == {"splits_disjoint", "declared_counts"}
    assert bad["splits_disjoint"].counterexample == {"seed": 7}        # hypothesis shrinks to the first bad seed
    assert "train and test share 1 identities" in bad["splits_disjoint"].message
    assert not report.ok and "smallest counterexample: {'seed': 7}" in report.text()
    assert check_task(SumTask, examples=30).ok


def test_each_invariant_can_fail():
    """A generator broken in one way fails exactly the invariant that checks it."""
    import numpy as np

    from critwin.empirical.tasks import Split, TaskData

    class Broken:
        def __init__(self, seed, how):
            self.seed, self.how = seed, how

        def generate(self):
            rng = np.random.default_rng(None if self.how == "random" else (0 if self.how == "seedless" else self.seed))
            x = rng.integers(0, 5, size=(8, 3))
            y = x.sum(axis=1) % 5 if self.how != "oracle" else (x.sum(axis=1) + 1) % 5
            vocab = 4 if self.how == "vocab" else 5
            return TaskData("b", vocab, 2 if self.how == "length" else 3,
                            {"train": Split(x.astype(np.int64), y.astype(np.int64))})

        def kit_spec(self):
            return KitSpec(oracle=lambda d, n, s: s.inputs.sum(axis=1) % 5)
    expect = {"random": "deterministic", "seedless": "seed_matters", "oracle": "targets_by_oracle",
              "vocab": "tokens_in_vocab", "length": "sequence_lengths"}
    for how, inv in expect.items():
        failed = {r.name for r in check_task(lambda seed: Broken(seed, how), examples=10).results
                  if r.status == "failed"}
        assert failed == {inv}, (how, failed)


def test_cli_on_registered_and_user_tasks(capsys, readme_example):
    assert main(["tasks", "check", "anchor_permutation", "--examples", "3"]) == 0
    assert "7 passed, 0 failed" in capsys.readouterr().out
    assert main(["tasks", "check", "readme_kit_example:leaky_sum_task", "--examples", "40", "--json"]) == 1
    out = json.loads(capsys.readouterr().out)
    assert not out["ok"] and {"name": "splits_disjoint", "status": "failed", "counterexample": {"seed": 7},
                               "message": next(r["message"] for r in out["results"]
                                               if r["name"] == "splits_disjoint")} in out["results"]
    assert main(["tasks", "check", "modarith", "--set", "hops=2"]) == 2
    assert "hops" in capsys.readouterr().err
    assert main(["tasks", "check", "no_module_here:f"]) == 2
    assert main(["tasks", "check", "critwin.empirical.tasks.scan:ScanTask", "--examples", "1"]) == 0
    assert "7 passed, 0 failed" in capsys.readouterr().out


def test_the_fixture(task_kit, readme_example):
    task_kit(readme_example.SumTask, examples=5)


def test_the_readme_example_runs_and_prints_what_it_says(readme_example):
    _, printed = _readme_blocks()
    out = readme_example.printed
    for line in printed.strip().splitlines():
        if "e.g. (" in line:
            line = line.split("e.g. (")[0]
        assert line.split(" (smallest")[0].strip() in out
    assert "{'seed': 7}" in out


def test_alchemy_leak_check_can_fail():
    """The withheld task's leak rule finds leaks where the support does hold the query potions
    (composition's support has every one-hop transition)."""
    leaks = AlchemyTask("withheld", None, 0, 2).kit_spec().leaks
    comp = AlchemyTask("composition", 2, 0, 2).generate()
    assert all(leaks(comp, "train", comp.splits["train"]))
    held = AlchemyTask("withheld", None, 0, 2).generate()
    assert not any(leaks(held, "train", held.splits["train"]))
