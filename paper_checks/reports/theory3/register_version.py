"""Register a later version of Theory III before the panel cells it is scored on train: the held share calibrated
per optimizer on the panel's earlier cells (bridge.calibrated), beside held_max as registered before and the three
trivial baselines refitted on the same build data. VERSIONS says what each version reads.

Build data: Theory II's cells and runs (build_cells.csv, build_runs.csv) and every panel run measured so far
(measured/*.csv, cells before FIRST_CELL in the registered order), snapshotted into v<N>/build_runs.csv. Scored on
FIRST_CELL and every cell after it, none of which may have a measured run yet; a run counts only if trained by a
commit that holds this registration (bridge.provenance), so measure those cells from a checkout at or after it.

A version with an extension (the sixth) is also scored on cells outside the panel, never measured: the same
optimizers and gammas at the lambdas between the panel's (EXTENSION), read from the same 48 no-decay probes at
those lambdas (probes.py probes_ext ...), and it carries earlier versions' calibrations unrefitted (`frozen`), so
those versions are scored on the new cells as they were registered.

Run: python3 paper_checks/reports/theory3/register_version.py VERSION FIRST_CELL [OUT]   (seconds; OUT default v<N>/)
"""
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

from critwin.bridge.calibrated import CLIP, LAMBDA_REF, RIDGE, CalibratedHeld
from critwin.bridge.panel import (BASELINES, METHOD_TEXT, ONSETS, SEEDS, TASK_SEEDS, at_onset, cell_plan,
                                  fit_baselines, load_probes, measured_edge, method_curve, register_cells,
                                  registration_stamp)
from critwin.bridge.skill import COMPOSES

HERE = Path(__file__).parent
VERSIONS = {      # the calibrated method each version registers, and the optimizers whose calibration reads train_acc;
    4: {"method": "held_cal", "train_terms": ()},          # frozen: earlier versions carried unrefitted;
    5: {"method": "held_fit", "train_terms": ("adamw",)},  # extension: also scored on the EXTENSION cells
    6: {"method": "held_refit", "train_terms": ("adamw",), "frozen": (4, 5), "extension": True},
}
VERDICT = ("written before any scored run trains: a method meets the goal when, on this registration's cells once all "
           "are measured, its skill over every baseline has a 90% interval above 0 per cell (|log2| edge error, "
           "over cells) and per run (Brier, over (cell, task instance) clusters); AUC is reported beside it. Readings "
           "before the last cell are the course, not the verdict. The carried versions are judged the same way here, "
           "beside the baselines refitted on this version's build data")
EXTENSION = {"optimizers": ("adamw", "sgd"), "gammas": (0.4, 0.65, 0.95, 1.2), "lambdas": (4e-3, 1.6e-2),
             "order_seed": 2027, "probes": "probes_ext"}
CAL_TEXT = (f"sigmoid(a + b logit(h) + c log2(lambda / {LAMBDA_REF:g})), h the run's held_max at t clipped to "
            f"[{CLIP:g}, {1 - CLIP:g}]")
TEXT = {
    "held_fit": f"P(composes at onset t) = {CAL_TEXT} for SGD; for AdamW the same plus d tr + e tr log2(lambda / "
                f"{LAMBDA_REF:g}), tr the run's own training accuracy at t in its no-decay probe (memorisation's "
                f"progress); the coefficients per optimizer by maximum likelihood with a ridge of {RIDGE:g}/2 on all "
                "but the intercept, on the build runs (bridge.calibrated); per cell the crossing of 1/2 by the mean of "
                "the 6 runs' curves",
    "held_cal": f"P(composes at onset t) = sigmoid(a + b logit(h) + c log2(lambda / {LAMBDA_REF:g})), h the run's "
                f"held_max at t clipped to [{CLIP:g}, {1 - CLIP:g}]; a, b, c per optimizer by maximum likelihood with "
                f"a ridge of {RIDGE:g}/2 (b^2 + c^2) on the build runs (bridge.calibrated); per cell the crossing of "
                "1/2 by the mean of the 6 runs' curves",
    "held_max": METHOD_TEXT["held_max"] + " (as in the third version, not refitted)",
    "constant": "the build cells' mean left edge (Theory II's and the panel's earlier cells, no window as 1,600); "
                "per run P = 1 at onsets past it, else 0",
    "nearest": METHOD_TEXT["nearest"].replace("build cell", "build cell (Theory II's or the panel's earlier)"),
    "onset_logistic": "a logistic curve of composes against the onset alone, fitted on the build runs (Theory II's "
                      "and the panel's earlier runs)",
}
TEXT["held_refit"] = TEXT["held_fit"] + " (the fifth version's form, refitted on this version's build runs)"
ORDINAL = {4: "fourth", 5: "fifth", 6: "sixth"}


def frozen_text(version: int) -> str:
    """A carried version's method as it was registered, with where its coefficients come from."""
    m = VERSIONS[version]["method"]
    return (f"{TEXT[m]}; as the {ORDINAL[version]} version registered it, its coefficients "
            f"(v{version}/registration.json: calibration) not refitted")


def extension_cells() -> list[dict]:
    """The extension's cells (never measured: lambdas between the panel's), in a fixed shuffled measuring order."""
    e = EXTENSION
    cells = [cell_plan("left", o, g, lam, 5000) for o in e["optimizers"] for g in e["gammas"] for lam in e["lambdas"]]
    return [cells[i] for i in np.random.default_rng(e["order_seed"]).permutation(len(cells))]


def panel_build(reg3: dict, first: str, measured: Path) -> pd.DataFrame:
    """The panel's runs measured before `first`, with their cell's settings and the held_max the third version
    registered for them (the same reading of the same probe)."""
    ids = [c["id"] for c in reg3["cells"]]
    if first not in ids:
        raise SystemExit(f"FIRST_CELL {first!r} is not a panel cell; one of: {', '.join(ids)}")
    later = ids[ids.index(first):]
    files = sorted(measured.glob("*.csv"))
    early = [f.stem for f in files if f.stem in later]
    if early:
        raise SystemExit(f"cells {', '.join(early)} already have measured runs: score this version only after them")
    runs = pd.concat([pd.read_csv(f) for f in files])
    runs = runs[runs["cell"].isin(ids[:ids.index(first)])]
    held = pd.read_csv(HERE / "registration_runs.csv")[["cell", "onset", "task_seed", "seed", "held_max"]]
    runs = runs.merge(held, on=["cell", "onset", "task_seed", "seed"], how="inner")
    settings = pd.DataFrame([{"cell": c["id"], "optimizer": c["optimizer"], "gamma": c["gamma"],
                              "lambda": c["lambda"]} for c in reg3["cells"]])
    runs = runs.merge(settings, on="cell")
    return runs[["cell", "optimizer", "gamma", "lambda", "onset", "task_seed", "seed", "held_max", "ood_acc",
                 "run", "commit"]].sort_values(["cell", "onset", "task_seed", "seed"]).reset_index(drop=True)


def baseline_inputs(build: pd.DataFrame, reg3: dict) -> tuple[pd.DataFrame, list[dict]]:
    """Theory II's build runs and cells with the panel's earlier runs and complete cells added in the same shape."""
    runs2 = pd.read_csv(HERE / "build_runs.csv")
    panel_runs = build.assign(width=5000, steps=20000, steps_done=20000)[list(runs2.columns)]
    cells = pd.read_csv(HERE / "build_cells.csv").to_dict(orient="records")
    plan = {c["id"]: c for c in reg3["cells"]}
    for cid, g in build.groupby("cell", sort=False):
        if len(g) < len(ONSETS) * len(TASK_SEEDS) * len(SEEDS):
            continue                     # a partial cell gives runs, not an edge
        edge = measured_edge(g)
        c = plan[cid]
        cells.append({"optimizer": c["optimizer"], "gamma": c["gamma"], "lambda": c["lambda"],
                      "edge": float("nan") if edge is None else edge, "source": f"panel cell {cid}"})
    return pd.concat([runs2, panel_runs], ignore_index=True), cells


def train_at_onset(probes: dict, runs: pd.DataFrame) -> list[float]:
    """Each run's training accuracy in its own no-decay probe at its onset (the last logged step at or before it)."""
    curves = [probes[(r.optimizer, float(r.gamma), int(r.task_seed), int(r.seed))] for r in runs.itertuples()]
    return [at_onset(c["step"], c["train_acc"], onset) for c, onset in zip(curves, runs["onset"])]


def main(version: int, first: str, out: Path) -> dict:
    if version not in VERSIONS:
        raise SystemExit(f"VERSION {version!r}: one of {', '.join(map(str, VERSIONS))}")
    spec = VERSIONS[version]
    method, train_terms = spec["method"], spec["train_terms"]
    frozen = {VERSIONS[v]["method"]: CalibratedHeld.from_coefficients(
        json.loads((HERE / f"v{v}" / "registration.json").read_text())["calibration"], VERSIONS[v]["train_terms"])
        for v in spec.get("frozen", ())}
    methods = (method, *frozen, "held_max")
    reg3 = json.loads((HERE / "registration.json").read_text())
    probes = load_probes(HERE / "probes")
    extension = extension_cells() if spec.get("extension") else []
    done = [c["id"] for c in extension if (HERE / "measured" / f"{c['id']}.csv").is_file()]
    if done:
        raise SystemExit(f"extension cells {', '.join(done)} already have measured runs")
    probes_ext = load_probes(HERE / EXTENSION["probes"]) if extension else {}
    ext_ids = {c["id"] for c in extension}
    build = panel_build(reg3, first, HERE / "measured")
    if train_terms:
        build.insert(build.columns.get_loc("held_max") + 1, "train_acc", train_at_onset(probes, build))
    cal = CalibratedHeld(train_terms).fit(build.assign(composes=(build["ood_acc"] >= COMPOSES).astype(float)))
    base_runs, base_cells = baseline_inputs(build, reg3)
    base = fit_baselines(base_runs, base_cells)
    ids = [c["id"] for c in reg3["cells"]]

    def run_curves(cell, ts, s):
        curves = (probes_ext if cell["id"] in ext_ids else probes)[(cell["optimizer"], cell["gamma"], ts, s)]
        steps, held = method_curve("held_max", curves, cell["lambda"])
        train = np.asarray(curves["train_acc"], float)
        p = {"held_max": held, method: cal.predict_proba(cell["optimizer"], held, cell["lambda"], train)}
        for name, c in frozen.items():
            p[name] = c.predict_proba(cell["optimizer"], held, cell["lambda"], train)
        return steps, p
    cells = [dict(c) for c in reg3["cells"][ids.index(first):]] + extension
    rows = register_cells(cells, run_curves, base, methods)
    command = (f"python3 paper_checks/reports/theory3/register_v4.py {first}" if version == 4 else
               f"python3 paper_checks/reports/theory3/register_version.py {version} {first}")
    reg = {
        **registration_stamp(command, HERE),
        "version": version,
        "methods": list(methods),
        "baselines": list(BASELINES),
        "method_text": {**{k: v for k, v in TEXT.items() if k in methods + BASELINES},
                        **{VERSIONS[v]["method"]: frozen_text(v) for v in spec.get("frozen", ())}},
        "calibration": cal.coefficients(),
        **({"train_terms": list(train_terms)} if train_terms else {}),
        **({"frozen": {VERSIONS[v]["method"]: v for v in spec["frozen"]}} if spec.get("frozen") else {}),
        **({"verdict": VERDICT} if extension else {}),
        **({"extension": {**EXTENSION, "cells": [c["id"] for c in extension],
                          "why": "cells never measured, so that earlier versions and this one are scored on more "
                                 "cells than the panel has left"}} if extension else {}),
        "build": {"panel_runs": int(len(build)), "panel_cells": sorted(build["cell"].unique().tolist()),
                  "theory2_runs": int(len(base_runs) - len(build)), "cells_with_edges": len(base_cells),
                  "constant_edge": round(base["constant"], 1),
                  "onset_logistic_edge": None if base["onset_logistic"].edge() is None
                  else round(base["onset_logistic"].edge(), 1)},
        "outcome": reg3["outcome"],
        "edge_rule": reg3["edge_rule"],
        "scoring": reg3["scoring"],
        "protocol": reg3["protocol"],
        "provenance": "a run counts only if trained by a commit whose tree holds this registration unchanged",
        "cells": cells,
    }
    out.mkdir(parents=True, exist_ok=True)
    (out / "registration.json").write_text(json.dumps(reg, indent=1) + "\n")
    pd.DataFrame(rows).to_csv(out / "registration_runs.csv", index=False, float_format="%.5g")
    build.to_csv(out / "build_runs.csv", index=False, float_format="%.6g")
    print(f"version {version}: {len(cells)} cells, {len(rows)} runs registered at {reg['registered']} "
          f"(commit {reg['commit'][:7]}); fitted on {len(build)} panel runs of {build['cell'].nunique()} cells; "
          f"wrote {out}")
    return reg


if __name__ == "__main__":
    if len(sys.argv) not in (3, 4):
        raise SystemExit(__doc__.strip().splitlines()[-1])
    main(int(sys.argv[1]), sys.argv[2], Path(sys.argv[3]) if len(sys.argv) == 4 else HERE / f"v{sys.argv[1]}")
