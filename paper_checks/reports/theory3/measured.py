"""Export one panel cell's finished runs from a run store into measured/<cell id>.csv: onset, task instance, seed,
final OOD accuracy, run id, the git commit that trained each run (to check it against the registration's) and
the device it trained on (cpu or cuda).
A cell still training exports the runs finished so far; `critwin bridge score` scores those per run only. Rows
already in the CSV whose runs the store lacks are kept (a store does not outlive its machine; the CSV does), and a
run in both takes the store's row.

Run: python3 paper_checks/reports/theory3/measured.py STORE CELL_ID   ($MEASURED: another folder than measured/;
     $REGISTRATION: the registration holding the cell, relative to this folder; default registration.json)
"""
import json
import os
import sys
from pathlib import Path

import pandas as pd

HERE = Path(__file__).parent
COLUMNS = ["cell", "onset", "task_seed", "seed", "ood_acc", "run", "commit", "device"]


def cell_runs(store: Path, cell: dict):
    opt = "sgd" if cell["optimizer"] == "sgd" else "adamw"
    if not store.is_dir():          # a store not made yet (a fresh machine): no finished run
        return
    for run in sorted(p for p in store.iterdir() if (p / "summary.json").is_file()):
        cfg = json.loads((run / "config.json").read_text())
        windows = cfg.get("wd_windows") or []
        if (cfg.get("task") != "anchor_permutation" or len(windows) != 1 or cfg["optimizer"] != opt
                or cfg["model"]["gamma"] != cell["gamma"] or windows[0][2] != cell["lambda"]
                or windows[0][1] - windows[0][0] != cell["width"] or cfg["decay_form"] != "l2"):
            continue
        summ = json.loads((run / "summary.json").read_text())
        if summ.get("status") != "complete" or summ.get("steps_done") != cfg["steps"]:
            continue
        env = json.loads((run / "environment.json").read_text())
        yield {"cell": cell["id"], "onset": int(windows[0][0]), "task_seed": cfg["task_seed"], "seed": cfg["seed"],
               "ood_acc": summ["final"]["ood_acc"], "run": run.name, "commit": env.get("git_commit"),
               "device": env.get("device")}


def merged(old: pd.DataFrame, new: pd.DataFrame) -> pd.DataFrame:
    """The earlier export's rows with the store's added; a run in both keeps the store's row."""
    frame = pd.concat([old[~old["run"].isin(new["run"])], new]) if len(old) else new
    return frame.sort_values(["onset", "task_seed", "seed"]).reset_index(drop=True)


if __name__ == "__main__":
    store, cid = Path(sys.argv[1]), sys.argv[2]
    reg = json.loads((HERE / os.environ.get("REGISTRATION", "registration.json")).read_text())
    (cell,) = [c for c in reg["cells"] if c["id"] == cid]
    out = Path(os.environ.get("MEASURED", HERE / "measured")) / f"{cid}.csv"
    new = pd.DataFrame(cell_runs(store, cell), columns=COLUMNS)
    old = pd.read_csv(out) if out.is_file() else new.iloc[:0]
    if not len(new) and not len(old):
        sys.exit(f"{cid}: no finished run in {store} and no earlier export: nothing written")
    frame = merged(old, new)
    out.parent.mkdir(exist_ok=True)
    frame.to_csv(out, index=False, float_format="%.6g")
    print(f"{cid}: {len(frame)} runs ({len(new)} from the store, {len(frame) - len(new)} kept) -> measured/{cid}.csv")
