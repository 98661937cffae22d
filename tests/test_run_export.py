"""Run exports (paper_checks/run_export.py): small files that stand in for a run store. Checked by round trips
through a store written by hand, and against the format of the committed exports."""
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from critwin.empirical import RunStore, TrainConfig
from critwin.empirical.store import Run, read_run
from critwin.paper_checks.run_export import collect_store, read_export, rebuild_store, write_export

ROOT = Path(__file__).resolve().parents[1] / "paper_checks" / "reports"
EXPORTS = [ROOT / "alchemy_authors" / "runs_stones", ROOT / "alchemy_authors" / "runs_authors",
           ROOT / "theory2" / "runs_export"]


def _run(seed, status="complete", steps_done=None):
    cfg = TrainConfig.from_flat({"task": "alchemy_withheld", "steps": 700, "seed": seed, "eval_every": 343})
    rows = [(s, sp, m, float(v)) for s in (0, 343, 686) for sp in ("test", "train") for m, v in
            (("event_a", 0.1 + s / 1000 + seed / 7), ("acc", 1 / 3 + s))]
    summary = {"status": status, **({"steps_done": steps_done} if steps_done else {})}
    return Run(cfg.resolved(), pd.DataFrame(rows, columns=["step", "split", "metric", "value"]), summary,
               {"host": f"h{seed}"})


def test_a_store_exported_and_rebuilt_has_the_same_runs_rows_and_statuses(tmp_path):
    src = RunStore(tmp_path / "src")
    runs = [_run(0), _run(1), _run(2, "paused", 343)]
    for r in runs:
        src.save(r)
    sizes = write_export(collect_store(src.root, "src"), tmp_path / "x")
    assert set(sizes) == {"run_index.csv", "run_metrics.parquet", "run_records.json"}
    written = rebuild_store(tmp_path / "x", tmp_path / "back")
    assert sorted(written) == sorted(r.run_id for r in runs)
    back = RunStore(tmp_path / "back")
    for r in runs:
        got = read_run(back.path(r.run_id))           # the folder name is its config's hash again
        pd.testing.assert_frame_equal(got.metrics.sort_values(["step", "split", "metric"]).reset_index(drop=True),
                                      r.metrics.sort_values(["step", "split", "metric"]).reset_index(drop=True),
                                      check_dtype=False)
        assert got.summary == r.summary and got.environment == r.environment
    assert back.status(runs[2].run_id) == "paused" and back.so_far(runs[2].run_id)[1] == 343
    index = pd.read_csv(tmp_path / "x" / "run_index.csv").set_index("run_id")
    assert index.loc[runs[0].run_id, "seed"] == 0 and index.loc[runs[2].run_id, "steps_done"] == 343
    assert (index.metric_rows == 12).all()
    assert rebuild_store(tmp_path / "x", tmp_path / "back") == []      # what the store has is kept


def test_an_export_keeps_only_the_splits_asked_for_and_refuses_a_run_twice(tmp_path):
    src = RunStore(tmp_path / "src")
    src.save(_run(0))
    recs = collect_store(src.root, "src")
    write_export(recs, tmp_path / "x", splits=("test",), environment=False)
    _, metrics, records = read_export(tmp_path / "x")
    assert set(metrics.split) == {"test"} and len(metrics) == 6
    assert "environment" not in next(iter(records.values()))
    with pytest.raises(Exception, match="each run once"):
        write_export(recs + recs, tmp_path / "y")


@pytest.mark.parametrize("folder", EXPORTS, ids=lambda p: p.parent.name + "/" + p.name)
def test_the_committed_exports_are_small_and_self_consistent(folder):
    """Each file under 1 MB; each record's config hashes to its run id; the index counts each run's rows
    (all splits, or more when only some splits were kept) and its steps reached never pass its steps."""
    index, metrics, records = read_export(folder)
    for p in folder.iterdir():
        assert p.stat().st_size < 1_000_000, p
    assert all(TrainConfig.from_dict(r["config"]).run_id() == rid for rid, r in records.items())
    assert set(index.run_id) == set(records) == set(metrics.run_id)
    counts = metrics.groupby("run_id").size()
    assert (index.set_index("run_id").metric_rows >= counts.reindex(index.run_id).to_numpy()).all()
    assert (index.steps_done <= index.steps).all() and (index.last_logged_step <= index.steps_done).all()
    assert np.isfinite(metrics.value.to_numpy()).mean() > 0.5
