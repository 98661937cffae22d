"""Recipe questions a GPU can settle, as commands: does the authors' decay (0.001 in their README, 0.01 or 0.1 in
their "best runs" file, with eta_min 7e-5) move the epoch at which held-out event A completes, against the
paper's 68-82? Every arm is the authors' recipe (`--size authors`), withheld task, the same epochs and seeds;
decay 0.001 / 0.01 / 0.1, each under the recipe's constant lr (their scheduler is never stepped) and under a
cosine to eta_min 7e-5 over the same epochs.

    python3 recipe_questions.py --dry-run                   # print the runs' commands; train nothing
    python3 recipe_questions.py --store OUT/store --device cuda --workers 6
    python3 recipe_questions.py --store OUT/store --read    # A's completion epoch per arm against 68-82

One arm to epoch 100 is 34,300 steps: about 25 minutes at the 0.043 s a step measured with 8 processes
sharing one H200 (README), so 6 arms x 3 seeds is about 1.3 device-hours; `--epochs 100` covers the paper's
68-82 with room (an arm that has not completed A by its end is censored there).
"""
from __future__ import annotations

import argparse
import shlex
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor

PAPER_A_EPOCHS = (68, 82)
DECAYS = (0.001, 0.01, 0.1)
ETA_MIN = 7e-5
SCHEDULES = {"constant": [], "cosine to 7e-5": ["--lr-schedule", "cosine", "--lr-final", f"{ETA_MIN:g}"]}


def arms(epochs: int, seeds, store: str, device: str) -> list[tuple[str, list[str]]]:
    """(label, command) per decay x schedule x seed."""
    out = []
    for wd in DECAYS:
        for sched, extra in SCHEDULES.items():
            for s in seeds:
                cmd = ["critwin", "train", "alchemy", "--task", "withheld", "--size", "authors", "--epochs", str(epochs),
                       "--wd", f"{wd:g}", *extra, "--seed", str(s), "--device", device, "--store", store,
                       "--threads", "1"]
                out.append((f"wd {wd:g}, {sched}, seed {s}", cmd))
    return out


def read(store: str, epochs: int, seeds, device: str) -> list[dict]:
    """A's completion epoch per arm (censored at its end when not complete), from the runs in `store`."""
    from critwin.empirical import RunStore
    from critwin.paper_checks.alchemy_checks import split_curves, timings
    rs, rows = RunStore(store), []
    for label, cmd in arms(epochs, seeds, store, device):
        cfg = config_of(cmd)
        curves = split_curves(rs, cfg)
        if curves is None:
            rows.append({"arm": label, "a_epoch": None, "note": "not stored"})
            continue
        t = timings(rs, curves, cfg)["event_a"]
        rows.append({"arm": label, "a_epoch": None if t["censored"] else round(t["epoch"], 1),
                     "note": (f"censored at epoch {t['epoch_reached']:.0f}" if t["censored"] else
                              "inside 68-82" if PAPER_A_EPOCHS[0] <= t["epoch"] <= PAPER_A_EPOCHS[1] else
                              "outside 68-82")})
    return rows


def config_of(cmd):
    """The config `critwin train alchemy` builds from the command (the CLI's own parser and builder)."""
    from critwin.cli.main import build_parser
    from critwin.cli.train import alchemy_config
    return alchemy_config(build_parser().parse_args(cmd[1:]))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", default="runs/recipe_questions/store")
    ap.add_argument("--epochs", type=int, default=100)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    ap.add_argument("--device", default="cuda", choices=["cpu", "cuda"])
    ap.add_argument("--workers", type=int, default=6, help="trainings at once (processes sharing the device)")
    ap.add_argument("--dry-run", action="store_true", help="print the runs' commands and train nothing")
    ap.add_argument("--read", action="store_true", help="print A's completion epoch per arm from the store")
    a = ap.parse_args(argv)
    runs = arms(a.epochs, a.seeds, a.store, a.device)
    if a.read:
        for r in read(a.store, a.epochs, a.seeds, a.device):
            print(f"{r['arm']:32s} A at epoch {r['a_epoch']}  ({r['note']}; paper 68-82)")
        return 0
    if a.dry_run:
        print(f"# {len(runs)} runs, {a.epochs} epochs each (paper: A completes at epochs 68-82)")
        for label, cmd in runs:
            print(f"{shlex.join(cmd)}    # {label}")
        return 0
    with ThreadPoolExecutor(a.workers) as pool:
        codes = list(pool.map(lambda lc: subprocess.run(lc[1]).returncode, runs))
    return int(any(codes))


if __name__ == "__main__":
    sys.exit(main())
