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


def test_missing_commands_fill_every_round_at_an_older_commit():
    """With WORKERS, each command's --pack makes the registration commit's packing rule (at least one pack a worker,
    at most --pack members each) split its runs into a multiple of the workers: no worker trains a last round alone."""
    mod = load("missing")
    cell = json.loads((THEORY3 / "registration.json").read_text())["cells"][1]
    grid = mod.grid_of(cell["measure"])[1]
    every = sorted(itertools.product(*grid.values()))
    for workers in (1, 2, 3, 4):
        for left in (54, 48, 24, 8, 6, 3, 1):
            for cmd in mod.commands(cell, set(every[:54 - left]), "s", workers):
                words = shlex.split(cmd)
                n = np.prod([len(words[i + 1].split("=")[1].split(",")) for i, w in enumerate(words)
                             if w == "--set" and words[i + 1].split("=")[0] in mod.GRID])
                size = int(words[words.index("--pack") + 1])
                k = max(-(-n // size), min(workers, n))         # 4eca280's engine.packs
                assert size <= 8 and (k % workers == 0 or k == n), (workers, left, n, size, k)
    assert "--pack" not in mod.commands(cell, set(), "s")[0]


def test_missing_commands_keep_a_killed_pack_whole(tmp_path, monkeypatch):
    """A pack killed midway (its resume state in the store, no member stored) sets the least --pack, so the sweep
    continues it rather than training it afresh; once one of its members is stored it no longer counts."""
    import torch

    from critwin.empirical.config import TrainConfig
    from critwin.empirical.store import PACK_RESUME_PREFIX
    mod = load("missing")
    cell = json.loads((THEORY3 / "registration.json").read_text())["cells"][1]
    configs = [TrainConfig(seed=s) for s in range(8)]
    tmp_path.joinpath(f"{PACK_RESUME_PREFIX}x.pt").write_bytes(b"")      # unreadable: ignored
    torch.save({"configs": [c.resolved() for c in configs]}, tmp_path / f"{PACK_RESUME_PREFIX}y.pt")
    pack = lambda: int(shlex.split(mod.commands(cell, set(), str(tmp_path), 2)[0])[-1])
    assert pack() == 8 and mod.resumable(str(tmp_path)) == 8
    monkeypatch.setattr(mod.RunStore, "status", lambda self, rid: "complete" if rid == configs[3].run_id() else None)
    assert pack() == 7 and mod.resumable(None) == 0


def test_a_stopped_measure_exports_the_cell_in_progress(tmp_path):
    """measure.sh stopped by SIGTERM to its process group (as a session's end stops it) exports the runs its cell
    finished so far, into $MEASURED; the sweep is a stand-in that stores one finished run and then waits."""
    import os
    import signal
    import subprocess
    import sys
    import time

    import pandas as pd
    reg = json.loads((THEORY3 / "registration.json").read_text())
    cell = reg["cells"][5]
    store, measured, mark = tmp_path / "store", tmp_path / "measured", tmp_path / "started"
    measured.mkdir()
    run = store / "0123456789abcdef"
    cfg = {"task": "anchor_permutation", "wd_windows": [[50.0, 50.0 + cell["width"], cell["lambda"]]],
           "optimizer": "sgd" if cell["optimizer"] == "sgd" else "adamw", "decay_form": "l2", "steps": 20000,
           "task_seed": 1, "seed": 0, "model": {"gamma": cell["gamma"]}}
    summary = {"status": "complete", "steps_done": 20000, "final": {"ood_acc": 0.75}}
    fake = tmp_path / "fake_critwin"
    fake.write_text("#!/usr/bin/env bash\n"
                    f"mkdir -p {run}\n"
                    f"echo '{json.dumps(cfg)}' > {run}/config.json\n"
                    f"echo '{json.dumps(summary)}' > {run}/summary.json\n"
                    f"echo '{json.dumps({'git_commit': 'abc'})}' > {run}/environment.json\n"
                    f"touch {mark}\nexec sleep 60\n")
    fake.chmod(0o755)
    env = {**os.environ, "STORE": str(store), "MEASURED": str(measured), "CRITWIN": str(fake),
           "PYTHON": sys.executable}
    proc = subprocess.Popen(["bash", str(THEORY3 / "measure.sh"), cell["id"]], env=env, start_new_session=True,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            preexec_fn=lambda: signal.signal(signal.SIGTERM, signal.SIG_DFL))
    deadline = time.time() + 60
    while not mark.exists() and time.time() < deadline and proc.poll() is None:
        time.sleep(0.1)
    assert mark.exists(), proc.communicate()[0]
    os.killpg(proc.pid, signal.SIGTERM)
    out = proc.communicate(timeout=60)[0].decode()
    assert proc.returncode != 0
    frame = pd.read_csv(measured / f"{cell['id']}.csv")
    assert list(frame.run) == [run.name] and frame.onset.tolist() == [50] and frame.ood_acc.tolist() == [0.75], out
    # nothing finished and nothing exported before: no file is written
    assert "nothing written" in subprocess.run(
        [sys.executable, str(THEORY3 / "measured.py"), str(tmp_path / "empty"), reg["cells"][6]["id"]],
        env={**env, "MEASURED": str(measured)}, capture_output=True, text=True).stderr
    assert not (measured / f"{reg['cells'][6]['id']}.csv").exists()
