"""The panel's measuring scripts go on across machines: missing.py's grids cover exactly the runs a cell's CSV
lacks (checked by enumerating every grid's runs), and its commands keep the cell's registered settings."""
import importlib.util
import itertools
import json
import shlex
from pathlib import Path

import numpy as np

THEORY3 = Path(__file__).resolve().parents[1] / "paper_checks" / "reports" / "theory3"


def load(name):
    spec = importlib.util.spec_from_file_location(name, THEORY3 / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_missing_grids_cover_exactly_the_missing_runs():
    mod = load("missing")
    grid = {"wd_window_start": [0, 50, 100, 150, 200, 300, 400, 600, 800], "task_seed": [0, 1, 2], "seed": [0, 1]}
    every = set(itertools.product(*grid.values()))
    rng = np.random.default_rng(0)
    for trial in range(200):
        done = {r for r in sorted(every) if rng.random() < trial / 200}
        runs = [r for g in mod.missing_grids(grid, done) for r in itertools.product(*g.values())]
        assert sorted(runs) == sorted(every - done)              # each missing run once, nothing else
    assert mod.missing_grids(grid, every) == [] and mod.missing_grids(grid, set()) == [grid]


def test_missing_commands_keep_the_registered_settings():
    mod = load("missing")
    reg = json.loads((THEORY3 / "registration.json").read_text())
    cell = reg["cells"][1]
    done = {(o, t, s) for o in (0, 50) for t in (0, 1, 2) for s in (0, 1)}
    (cmd,) = mod.commands(cell, done, "/elsewhere/store")
    words, fixed = shlex.split(cmd), shlex.split(cell["measure"])
    settings = {w for w in fixed if "=" in w and w.split("=")[0] not in mod.GRID}
    assert settings <= set(words) and words[words.index("--store") + 1] == "/elsewhere/store"
    assert "wd_window_start=100,150,200,300,400,600,800" in words
