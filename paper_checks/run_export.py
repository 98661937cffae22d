"""Small files in place of run stores: every run's metrics rows, its config and summary, and an index.

A run store (`empirical.store.RunStore`) holds a folder per run and, for runs cut short, a resume state with
the model inside; neither belongs in git. What the checks and reports read from a store is each run's
config, summary and metrics rows, so that is what an export keeps:

    run_index.csv        one row per run: id, where it came from, status, config essentials, seed,
                         task_seed, steps planned and reached, epochs reached (passes over its task's
                         training set)
    run_metrics.parquet  every run's metrics rows (run_id, step, split, metric, value), as stored
    run_records.json     per run: its config, summary and environment (the store's three JSON files)

`rebuild_store` writes a store back from them (each run's folder as the store wrote it, without
checkpoints); a run exported from a resume state comes back as a paused folder at the step it reached,
which a check reading runs in progress (`--in-progress`) reads as far as it got.
"""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd

from critwin.errors import ConfigError

INDEX, METRICS, RECORDS = "run_index.csv", "run_metrics.parquet", "run_records.json"
RESUME_EXPORT = "exported from a resume state"


def _essentials(config: dict) -> dict:
    """The config fields a reader of the index needs to tell runs apart."""
    from critwin.empirical.presets import steps_per_epoch
    from critwin.empirical.store import config_columns
    c = config_columns(config)
    keep = ("task", "hops", "input_format", "ablation", "seed", "task_seed", "steps", "batch_size", "lr",
            "lr_schedule", "lr_final", "wd_windows", "decay_form", "decay_set", "betas", "init", "layer_init",
            "layers", "d", "heads", "precision", "device", "freeze", "freeze_optimizer", "branch", "eval_every")
    out = {k: c.get(k) for k in keep}
    try:
        from critwin.empirical.config import TrainConfig
        cfg = TrainConfig.from_dict(config)
        out["steps_per_epoch"] = float(steps_per_epoch({"task": cfg.task, "task_seed": cfg.task_seed,
                                                        "batch_size": cfg.batch_size, **cfg.task_options()}))
    except Exception:  # noqa: BLE001 - a task without epochs (the anchor tasks) has none
        out["steps_per_epoch"] = float("nan")
    return out


def collect_store(root, source: str) -> list[dict]:
    """Every run folder of the store at `root` (complete, paused, failed) as an export record."""
    from critwin.empirical.store import RunStore
    store = RunStore(root).require()
    ids, bad = store.scan()
    if bad:
        raise ConfigError("store", str(root), "a store without damaged run folders: " + "; ".join(map(str, bad)))
    out = []
    for rid in ids:
        run = store.load(rid)
        out.append({"run_id": rid, "source": source, "config": run.config, "summary": run.summary,
                    "environment": run.environment, "metrics": run.metrics})
    return out


def collect_resume_state(path, source: str) -> dict:
    """A run cut short, from its resume state (`.resume-ID.pt`, or a carried `state.pt`): its rows so far."""
    import torch
    from critwin.empirical.config import TrainConfig
    state = torch.load(path, map_location="cpu", weights_only=False)
    config = state["config"]
    rid = TrainConfig.from_dict(config).run_id()
    metrics = pd.DataFrame(state["rows"], columns=["step", "split", "metric", "value"])
    summary = {"status": "paused", "steps_done": int(state["step"]), "wall_seconds": float(state.get("wall", 0.0)),
               "note": f"{RESUME_EXPORT} at step {int(state['step'])} of {int(config['steps'])}"}
    return {"run_id": rid, "source": source, "config": config, "summary": summary, "environment": {},
            "metrics": metrics}


def write_export(records: list[dict], out, splits=None, environment: bool = True) -> dict:
    """Write the three files into `out` (replacing them); returns their sizes in bytes. `splits`: keep only the
    metrics rows of these splits (all when None; the index counts every row); environment False: leave each
    run's environment out of the records (a rebuilt run then has an empty one)."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    ids = [r["run_id"] for r in records]
    if len(set(ids)) != len(ids):
        dup = sorted({i for i in ids if ids.count(i) > 1})
        raise ConfigError("runs", dup, "each run once across the exported stores")
    records = sorted(records, key=lambda r: r["run_id"])
    index = []
    for r in records:
        m, s = r["metrics"], r["summary"]
        ess = _essentials(r["config"])
        done = int(s.get("steps_done", m.step.max() if len(m) else 0))
        index.append({"run_id": r["run_id"], "source": r["source"], "status": s.get("status"), **ess,
                      "steps_done": done, "last_logged_step": int(m.step.max()) if len(m) else -1,
                      "epochs_done": done / ess["steps_per_epoch"] if ess["steps_per_epoch"] > 0 else float("nan"),
                      "metric_rows": len(m)})
    pd.DataFrame(index).to_csv(out / INDEX, index=False)
    frames = [r["metrics"].assign(run_id=r["run_id"])[["run_id", "step", "split", "metric", "value"]]
              for r in records]
    if splits is not None:
        frames = [f[f.split.isin(splits)] for f in frames]
    metrics = pd.concat(frames, ignore_index=True)
    for col in ("run_id", "split", "metric"):
        metrics[col] = metrics[col].astype("category")
    metrics["step"] = metrics["step"].astype("int64")
    metrics.to_parquet(out / METRICS, index=False, compression="zstd")
    keys = ("source", "config", "summary") + (("environment",) if environment else ())
    (out / RECORDS).write_text(json.dumps({r["run_id"]: {k: r[k] for k in keys} for r in records},
                                          separators=(",", ":"), default=_json_default) + "\n")
    return {p.name: p.stat().st_size for p in (out / INDEX, out / METRICS, out / RECORDS)}


def _json_default(v):
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating,)):
        return float(v)
    raise TypeError(f"not JSON: {type(v).__name__}")


def read_export(folder) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """(index, metrics, records) of an export folder."""
    folder = Path(folder)
    missing = [n for n in (INDEX, METRICS, RECORDS) if not (folder / n).is_file()]
    if missing:
        raise ConfigError("export", str(folder), "a folder with " + ", ".join((INDEX, METRICS, RECORDS)))
    metrics = pd.read_parquet(folder / METRICS)
    for col in ("run_id", "split", "metric"):
        metrics[col] = metrics[col].astype(str)
    return pd.read_csv(folder / INDEX), metrics, json.loads((folder / RECORDS).read_text())


def export_records(folder) -> list[dict]:
    """The records of an export folder, in the form `write_export` takes (to merge an export with a store's runs)."""
    _, metrics, records = read_export(folder)
    by_run = {rid: g.drop(columns="run_id").reset_index(drop=True) for rid, g in metrics.groupby("run_id", sort=False)}
    return [{"run_id": rid, **rec, "environment": rec.get("environment", {}),
             "metrics": by_run.get(rid, metrics.iloc[:0].drop(columns="run_id"))} for rid, rec in records.items()]


def rebuild_store(folders, root, sources=None) -> list[str]:
    """Write every run of the export folder(s) into a store at `root` (runs it has already are kept);
    `sources`: only runs exported from those sources. Returns the run ids written."""
    from critwin.empirical.store import Run, RunStore
    store = RunStore(root).ensure_writable()
    written = []
    for folder in [folders] if isinstance(folders, (str, Path)) else folders:
        _, metrics, records = read_export(folder)
        by_run = {rid: g for rid, g in metrics.groupby("run_id", sort=False)}
        for rid, rec in records.items():
            if sources is not None and rec["source"] not in sources:
                continue
            if store.has(rid):
                continue
            m = by_run.get(rid, metrics.iloc[:0]).drop(columns="run_id").reset_index(drop=True)
            store.save(Run(config=rec["config"], metrics=m, summary=rec["summary"],
                           environment=rec.get("environment", {})))
            written.append(rid)
    return written
