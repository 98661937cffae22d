"""The panel's measuring scripts go on across machines: missing.py's grids cover exactly the runs a cell's CSV
lacks (checked by enumerating every grid's runs), and its commands keep the cell's registered settings."""
import importlib.util
import itertools
import json
import shlex
from pathlib import Path

import numpy as np
import pytest

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


def test_missing_commands_on_a_gpu_train_a_cell_as_one_pack():
    """DEVICE cuda: the runs train on the GPU, the whole cell (54 runs) as one pack at the measuring commit's rule,
    the registered settings kept; a device the config does not know is refused by name."""
    mod = load("missing")
    cell = json.loads((THEORY3 / "registration.json").read_text())["cells"][1]
    (cmd,) = mod.commands(cell, set(), "s", 1, "cuda")
    words = shlex.split(cmd)
    assert "device=cuda" in words and words[words.index("--pack") + 1] == "54"
    (cpu,) = mod.commands(cell, set(), "s", 1)
    assert shlex.split(cpu)[-1] == "8" and "device=cuda" not in cpu        # on a CPU: 7 packs of 7-8
    with pytest.raises(SystemExit, match="DEVICE"):
        mod.commands(cell, set(), "s", 1, "gpu")


def _fake_measure(tmp_path, sleep):
    """A stand-in for critwin that stores one finished run of the cell it is asked for (its lambda and gamma read
    from the command), then sleeps; returns the environment for measure.sh."""
    import os
    import sys
    store, measured = tmp_path / "store", tmp_path / "measured"
    measured.mkdir()
    fake = tmp_path / "fake_critwin"
    fake.write_text(
        "#!/usr/bin/env python3\n"
        "import json, sys, time, pathlib\n"
        "a = dict(w.split('=', 1) for w in sys.argv if '=' in w)\n"
        "opt = a.get('optimizer', 'adamw'); g = float(a['gamma']); lam = float(a['wd'])\n"
        f"run = pathlib.Path({str(store)!r}) / f'{{opt}}{{g}}{{lam}}'\n"
        "run.mkdir(parents=True)\n"
        "cfg = {'task': 'anchor_permutation', 'wd_windows': [[0.0, 5000.0, lam]], 'optimizer': opt,\n"
        "       'decay_form': 'l2', 'steps': 20000, 'task_seed': 0, 'seed': 0, 'model': {'gamma': g}}\n"
        "(run / 'config.json').write_text(json.dumps(cfg))\n"
        "(run / 'summary.json').write_text(json.dumps({'status': 'complete', 'steps_done': 20000,\n"
        "                                              'final': {'ood_acc': 0.5}}))\n"
        "dev = a.get('device', 'cpu')\n"
        "(run / 'environment.json').write_text(json.dumps({'git_commit': 'abc', 'device': dev}))\n"
        f"time.sleep({sleep})\n")
    fake.chmod(0o755)
    return {**os.environ, "STORE": str(store), "MEASURED": str(measured), "CRITWIN": str(fake),
            "PYTHON": sys.executable}


def test_measure_stops_at_its_deadline_and_copies_each_cell(tmp_path):
    """With DEADLINE, measure.sh starts no cell that the longest cell so far says would end after it (the first
    cell always starts); with COPY_TO each CSV it writes is copied there (a lent GPU's $OUT); DEVICE reaches the
    sweep command and the export records it."""
    import subprocess
    import time

    import pandas as pd
    reg = json.loads((THEORY3 / "registration.json").read_text())
    cells = [c["id"] for c in reg["cells"][6:9]]
    env = _fake_measure(tmp_path, 2)
    copy = tmp_path / "out"
    copy.mkdir()
    env.update(DEADLINE=str(int(time.time()) + 3), COPY_TO=str(copy), DEVICE="cuda")
    done = subprocess.run(["bash", str(THEORY3 / "measure.sh"), *cells], env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "device=cuda" in done.stdout and f"{cells[1]}: not started" in done.stdout, done.stdout
    assert sorted(p.name for p in copy.iterdir()) == [f"{cells[0]}.csv"]
    assert pd.read_csv(copy / f"{cells[0]}.csv").device.tolist() == ["cuda"]
    # no deadline: every cell runs
    (tmp_path / "again").mkdir()
    env2 = _fake_measure(tmp_path / "again", 0)
    done = subprocess.run(["bash", str(THEORY3 / "measure.sh"), *cells], env=env2, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0 and "not started" not in done.stdout, done.stdout + done.stderr
    assert len(list((tmp_path / "again" / "measured").iterdir())) == 3


def test_measure_reads_another_registrations_cells(tmp_path):
    """With REGISTRATION, measure.sh measures that registration's cells in its order (an extension's cells, which
    the panel's registration lacks), and missing.py and measured.py find them there."""
    import subprocess

    import pandas as pd
    from critwin.bridge.panel import cell_plan
    cells = [cell_plan("left", "sgd", 0.65, 1.6e-2, 5000), cell_plan("left", "adamw", 1.2, 4e-3, 5000)]
    reg = tmp_path / "registration.json"
    reg.write_text(json.dumps({"cells": cells}))
    env = {**_fake_measure(tmp_path, 0), "REGISTRATION": str(reg)}
    done = subprocess.run(["bash", str(THEORY3 / "measure.sh")], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    order = [line.split()[1].rstrip(":") for line in done.stdout.splitlines() if "sweep run" in line]
    assert order == [c["id"] for c in cells]
    assert "optimizer=sgd" in done.stdout and "wd=0.016" in done.stdout and "wd=0.004" in done.stdout
    for c in cells:
        row = pd.read_csv(tmp_path / "measured" / f"{c['id']}.csv").iloc[0]
        assert row["cell"] == c["id"] and row["ood_acc"] == 0.5


def test_device_source_checks_out_the_commit(tmp_path):
    """device_source.sh makes a clean checkout of HEAD (so a run trained from it records its commit), small enough
    to travel to a lent GPU (the device tool sends at most 64 MiB), without reference checkpoints."""
    import subprocess
    want = subprocess.run(["git", "-C", str(THEORY3), "rev-parse", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    dest = tmp_path / "src"
    done = subprocess.run(["bash", str(THEORY3 / "device_source.sh"), str(dest)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    git = lambda *a: subprocess.run(["git", "-C", str(dest), *a], capture_output=True, text=True).stdout.strip()
    assert git("rev-parse", "HEAD") == want and git("status", "--porcelain", "--untracked-files=no") == ""
    assert (dest / "empirical" / "engine.py").is_file() and not (dest / "paper_checks/reports/alchemy_authors").exists()
    size = sum(p.stat().st_size for p in dest.rglob("*") if p.is_file())
    assert size < 48 * 2 ** 20, size


@pytest.mark.slow
def test_measure_device_checks_its_trainer_on_a_cpu(tmp_path):
    """measure_device.sh end to end on a CPU (DEVICE=cpu, LIMIT 0): both environments built, the trainer's checkout
    found clean and holding this registration, a smoke pack trained as a pack, and no cell started."""
    import importlib.util
    import os
    import subprocess
    if importlib.util.find_spec("wheel") is None:
        pytest.skip("building the editable installs offline needs the wheel package")
    src = tmp_path / "src"
    subprocess.run(["bash", str(THEORY3 / "device_source.sh"), str(src)], check=True, capture_output=True)
    env = {**os.environ, "SRC": str(src), "VENVS": str(tmp_path / "venvs"), "OUT": str(tmp_path / "out"),
           "DEVICE": "cpu", "STORE": str(tmp_path / "store")}
    done = subprocess.run(["bash", str(THEORY3 / "measure_device.sh"), "0"], env=env, capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "a pack trains on cpu" in done.stdout, done.stdout
    assert not list((tmp_path / "out").iterdir())
