"""W11 under each decay reading: the grokking step against lambda, constant vs window, every run a dot.

Run from the repository root after the checks have written their results:
  python paper_checks/reports/w11_readings/plot.py paper_checks/results/W11_paper_decoupled_matrices_tasks1_seeds1.json \
      paper_checks/results/W11_paper.json
Writes grokking_steps.png beside this file. A run that never groks is drawn at T (censored), hollow.
"""
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

T = 10_000


def points(result: dict, kind: str):
    """(lambda, step) of every measured run of one schedule kind ('constant' or 'window')."""
    out = []
    for r in result["rows"]:
        name = r["value"].split()
        if len(name) == 2 and name[0] == kind:
            out += [(float(name[1]), v) for v in r.get("per_seed", []) if v == v]
    return out


def main(paths) -> Path:
    results = [json.loads(Path(p).read_text()) for p in paths]
    fig, axes = plt.subplots(1, 2, figsize=(10, 4), sharey=True)
    for ax, kind, paper in zip(axes, ("constant", "window"), (700, 3500)):
        ax.plot([0.01], [paper], "*", color="tab:red", ms=16, alpha=0.6, zorder=1, label="paper (lambda* = 0.01)")
        for res, marker, colour in zip(results, "osD^", ("tab:blue", "tab:green", "tab:purple", "tab:orange")):
            pts = points(res, kind)
            label = f"{res['reading']} ({len(pts)} runs)"
            for filled in (True, False):
                sel = [(x, y) for x, y in pts if (y < T) == filled]
                if sel:
                    ax.plot(*zip(*sel), marker, ls="none", ms=6, color=colour if filled else "none",
                            markeredgecolor=colour, alpha=0.8, zorder=3,
                            label=label + ("" if filled else ": never (censored at T)"))
        ax.set(xscale="log", yscale="log", xlabel="decay lambda", title=f"{kind} decay"
               + (" [0.1T, 0.6T)" if kind == "window" else ""))
        ax.legend(fontsize=7)
    axes[0].set_ylabel("grokking step (test accuracy >= 0.95)")
    fig.tight_layout()
    out = Path(__file__).with_name("grokking_steps.png")
    fig.savefig(out, dpi=120)
    return out


if __name__ == "__main__":
    print(main(sys.argv[1:]))
