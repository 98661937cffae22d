"""Export the finished runs carried in store_carry/ into small files (`paper_checks/run_export.py`):
runs_export/run_index.csv (every run: id, config essentials, seed, task_seed, steps), run_records.json (each run's
config and summary) and run_metrics.parquet (the held-out split's rows: the curves the edges are read from).

    python3 paper_checks/reports/theory2/export_runs.py
"""
from __future__ import annotations

from pathlib import Path

from critwin.paper_checks.run_export import collect_store, write_export

HERE = Path(__file__).resolve().parent

if __name__ == "__main__":
    recs = collect_store(HERE / "store_carry", "store_carry")
    sizes = write_export(recs, HERE / "runs_export", splits=("ood",), environment=False)
    print(f"{len(recs)} runs; " + ", ".join(f"{k} {v / 1e6:.2f} MB" for k, v in sizes.items()))
