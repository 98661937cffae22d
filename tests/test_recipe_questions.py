"""The recipe questions' commands (paper_checks/reports/alchemy_authors/recipe_questions.py), parsed by the CLI's
own parser: each arm is the authors' recipe with only its decay and schedule changed; --dry-run trains nothing."""
import importlib.util
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

PATH = Path(__file__).resolve().parents[1] / "paper_checks" / "reports" / "alchemy_authors" / "recipe_questions.py"


def _module():
    spec = importlib.util.spec_from_file_location("recipe_questions", PATH)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_each_arm_changes_only_its_decay_and_schedule():
    rq = _module()
    runs = rq.arms(100, [0, 1, 2], "S", "cuda")
    assert len(runs) == 3 * 2 * 3
    base = rq.config_of(["critwin", "train", "alchemy", "--task", "withheld", "--size", "authors", "--epochs", "100",
                         "--device", "cuda", "--store", "S", "--threads", "1"])
    seen = set()
    for label, cmd in runs:
        c = rq.config_of(cmd)
        wd = c.wd_windows[0][2]
        cos = c.lr_schedule == "cosine"
        assert c.steps == base.steps and c.wd_windows[0][:2] == (0.0, float(base.steps))
        assert (c.lr_final == 7e-5) if cos else (c.lr_schedule == base.lr_schedule)
        same = replace(c, wd_windows=base.wd_windows, lr_schedule=base.lr_schedule, lr_final=base.lr_final, seed=0)
        assert same.run_id() == base.run_id()            # nothing else differs from the authors' recipe
        seen.add((wd, cos, c.seed))
    assert seen == {(w, cos, s) for w in (0.001, 0.01, 0.1) for cos in (False, True) for s in (0, 1, 2)}


def test_dry_run_prints_the_runs_and_trains_nothing(tmp_path):
    out = subprocess.run([sys.executable, str(PATH), "--dry-run", "--store", str(tmp_path / "s")], capture_output=True,
                         text=True, check=True, timeout=120).stdout.splitlines()
    assert len([x for x in out if x.startswith("critwin train alchemy")]) == 18
    assert not (tmp_path / "s").exists()
