"""The Alchemy set for a lent GPU: S6 (plasticity by freezing, branched from the S1 run's
checkpoints) and S1 (stage order) at the authors' recipe, within a deadline.

S6 trains its baseline (the S1 run itself at --size authors) and then the frozen branches, several
processes sharing the GPU (--workers); S1 is then judged from the same baseline (at other sizes its
run differs from S6's baseline and is trained).
With --ablation-epochs N it then trains the recipe ablation (paper_checks/recipe_ablation.py: each difference
between the authors' code and the paper's text put back alone, A at equal epochs) in the time left: each arm is
the --ablation-horizon-epoch run (default 150, the long run's) paused after N epochs, so schedules are the long
run's; --ablation-arms and --ablation-seeds choose arms and seeds. `--checks` with no names runs the ablation alone;
OUT/ablation.csv holds A at equal epochs, OUT/ablation_curves.csv every arm's held-out curves.
With --stone-checks (e.g. S4 S5) it then runs those checks under the stone-token variation at --stone-size
(cpu: the committed protocol, 3 seeds) into OUT/store: S4 and S5 are ~35 CPU-hours on an AVX-512 host and
~115 on an AVX2 one (paper_checks/reports/alchemy_authors/README.md), minutes on a GPU. Copy OUT/store's finished runs into paper_checks/reports/alchemy_authors/stone_store/ to
carry them, and judge with `critwin check S4 --size cpu --seeds 3 --input-format stone_states --no-train ...`.
A run cut by the deadline keeps its resume state in OUT/store: the same command continues it.

Run: python3 paper_checks/gpu_alchemy.py --out OUT [--size authors] [--device cuda] [--workers 8]
     [--seeds 1] [--freeze-points 3] [--deadline 540] [--ablation-epochs 60] [--ablation-horizon 150]
     [--ablation-arms ARM ...] [--ablation-seeds 0 1] [--checks S6 S1]
     [--stone-checks S4 S5] [--stone-size cpu] [--stone-seeds 3]
(On a CPU, `--size quick --device cpu --workers 1` runs the same machinery in about a minute.)
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import pandas as pd

from critwin.paper_checks.alchemy_checks import AUTHORS_EPOCHS
from critwin.paper_checks.recipe_ablation import ARMS


def check(ids: str, args, extra: list, deadline: float, size: str | None = None, seeds: int | None = None) -> dict:
    """One `critwin check` into OUT (at --size and --seeds unless given); its JSON, or the reason it stopped."""
    from critwin.paper_checks.deadline import last_error_line, run_before
    cmd = [sys.executable, "-m", "critwin.cli", "check", ids, "--size", size or args.size, "--device", args.device,
           "--seeds", str(seeds or args.seeds), "--store", str(args.out / "store"),
           "--results", str(args.out / "results"),
           "--workers", str(args.workers), "--no-progress", "--json", *extra]
    r = run_before(cmd, deadline, cwd=args.out)    # not the repository root, whose critwin/ would shadow the install
    if r == "not run":
        return {"id": ids, "verdict": "not run: deadline reached"}
    if r == "stopped":
        return {"id": ids, "verdict": "stopped at the deadline (runs keep their resume states)"}
    if r.returncode not in (0, 1):
        return {"id": ids, "verdict": f"error: {last_error_line(r) or r.returncode}"}
    out = json.loads(r.stdout)
    return {"id": ids, "verdict": out["verdict"], "rows": out.get("rows", [])}


def ablation(args, deadline: float) -> list[dict]:
    """The recipe ablation (--ablation-arms at --ablation-seeds) in the time left: its table of A at equal epochs
    (also written as OUT/ablation.csv) and every arm's held-out curves (OUT/ablation_curves.csv)."""
    from critwin.empirical.presets import alchemy_flat, steps_per_epoch
    from critwin.paper_checks.recipe_ablation import a_by_epoch, ablation_table, held_out_curves, train_arms
    ran = train_arms(args.ablation_arms or list(ARMS), args.size, args.ablation_epochs, args.ablation_seeds,
                     args.device, args.out / "store", args.workers, deadline,
                     max(args.ablation_horizon, args.ablation_epochs))
    per_epoch = steps_per_epoch(alchemy_flat(args.size, "withheld", None, args.ablation_epochs))
    curves = held_out_curves(ran, per_epoch)
    curves.to_csv(args.out / "ablation_curves.csv", index=False)
    step = max(1, args.ablation_epochs // 6)
    table = ablation_table({arm: a_by_epoch(curves, arm) for arm in ran}, range(step, args.ablation_epochs + 1, step))
    table["status"] = [ran[a][1] for a in table.arm]
    table.to_csv(args.out / "ablation.csv", index=False)
    return table.to_dict("records")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--size", default="authors")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--workers", type=int, default=8)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--freeze-points", type=int, default=3)
    ap.add_argument("--deadline", type=float, default=540.0, help="seconds for the whole job")
    ap.add_argument("--checks", nargs="*", default=["S6", "S1"], choices=["S6", "S1"],
                    help="the checks to run, in order (none: the ablation alone)")
    ap.add_argument("--ablation-epochs", type=int, default=0, help="train the recipe ablation this long (0: not)")
    ap.add_argument("--ablation-horizon", type=int, default=AUTHORS_EPOCHS,
                    help="the arms' runs are this many epochs long (their schedules span it), paused at"
                         " --ablation-epochs; default the long run's")
    ap.add_argument("--ablation-arms", nargs="+", default=None, choices=list(ARMS), metavar="ARM",
                    help="the arms to train (default all): " + "; ".join(ARMS))
    ap.add_argument("--ablation-seeds", nargs="+", type=int, default=[0], help="the seeds of each arm (default 0)")
    ap.add_argument("--stone-checks", nargs="*", default=[], choices=["S1", "S2", "S3", "S4", "S5"],
                    help="then these checks under the stone-token variation (labelled so in their verdicts)")
    ap.add_argument("--stone-size", default="cpu", help="the stone-token checks' size (cpu: the committed protocol)")
    ap.add_argument("--stone-seeds", type=int, default=3, help="the stone-token checks' seeds")
    args = ap.parse_args(argv)
    t0 = time.time()
    deadline = t0 + args.deadline
    args.out = args.out.resolve()
    args.out.mkdir(parents=True, exist_ok=True)
    extra = {"S6": ["--freeze-points", str(args.freeze_points)], "S1": []}
    # S6 first: at the authors' size S1's run is S6's baseline, stored already
    results = [check(c, args, extra[c], deadline) for c in args.checks]
    summary = {"size": args.size, "device": args.device, "results": results}
    if args.ablation_epochs > 0:
        summary["ablation"] = ablation(args, deadline)
    for c in args.stone_checks:   # after the ablation: the paper-size work comes first
        stone = check(c, args, ["--input-format", "stone_states"], deadline, args.stone_size, args.stone_seeds)
        results.append({**stone, "id": f"{c} (stone tokens)"})
    summary["seconds"] = time.time() - t0
    (args.out / "gpu_alchemy.json").write_text(json.dumps(summary, indent=1))
    for r in results:
        print(f"{r['id']}: {r['verdict']}")
    if "ablation" in summary:
        print(pd.DataFrame(summary["ablation"]).to_string(index=False, float_format="%.3f"))
    print(f"{summary['seconds']:.0f} s; results in {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
