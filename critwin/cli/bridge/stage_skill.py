"""`critwin bridge stage-skill`: predicted Alchemy stages scored run by run against a base-rate baseline."""
from __future__ import annotations

from critwin.table import format_table


def register(sub):
    p = sub.add_parser("stage-skill", help="predicted Alchemy stages scored run by run against a base-rate baseline",
                       description="Reads an export of Alchemy runs (run_index.csv, run_metrics.parquet,"
                                   " run_records.json), times every unfrozen run's stages A, P(B|A), P(C|A,B) with"
                                   " censoring, predicts them per task instance with the linear readout's flow, and"
                                   " scores the predicted orders and time ratios against a baseline that knows only"
                                   " the observed base rates. No training.")
    p.add_argument("--export", required=True, help="folder of an export (paper_checks/run_export.py)")
    p.add_argument("--chemistries", type=int, default=0, help="chemistries per split for the prediction (0 = all)")
    p.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--out", default=None, help="write skill.csv, runs.csv, predicted.csv here")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_stage_skill)


def cmd_stage_skill(args):
    from pathlib import Path

    from critwin.bridge.stage_skill import stage_skill
    from critwin.paper_checks.run_export import read_export
    index, metrics, _ = read_export(args.export)
    res = stage_skill(index, metrics, chemistries=args.chemistries or None, resamples=args.resamples, seed=args.seed)
    payload = {"table": res["table"].to_dict(orient="records"), "predicted": res["predicted"]}
    text = [format_table(res["table"].to_dict(orient="records")),
            "one timing rule for model and runs: the stage level (0.95 for A, 0.90 for P(B|A), P(C|A,B)) held for 3"
            " evaluations in a row (flow-time grid points for the model); observed times as intervals (the evaluation"
            " before, the completing one], censored ones as (step reached, inf); a comparison counts only where no"
            " time inside them could flip it. Skill: baseline's error minus the model's, 90% bootstrap over task"
            " instances."]
    if args.out:
        out = Path(args.out)
        out.mkdir(parents=True, exist_ok=True)
        res["table"].to_csv(out / "skill.csv", index=False, float_format="%.6g")
        cols = [c for c in res["runs"].columns if not c.startswith("epoch_reached_")]
        res["runs"][cols].sort_values(["instance", "run_id"]).to_csv(out / "runs.csv", index=False, float_format="%.6g")
        import pandas as pd
        pd.DataFrame([{"instance": k, **{f"t_{s}": v["stage_times"][s] for s in ("A", "B|A", "C|AB")},
                       "event_order": v["order"], "dip_B|A": v["dip_b_given_a"]["depth"], "dip_t": v["dip_b_given_a"]["t"],
                       **{f"final_{s}": v["final"][s] for s in ("A", "B|A", "C|AB")}}
                      for k, v in res["predicted"].items()]).to_csv(out / "predicted.csv", index=False,
                                                                    float_format="%.6g")
        text.append(f"wrote {out}/skill.csv, runs.csv and predicted.csv")
    return payload, "\n".join(text)
