"""Export a store's finished runs into small files (`paper_checks/run_export.py`): runs_export/run_index.csv (every
run: id, config essentials, seed, task_seed, steps), run_records.json (each run's config and summary) and
run_metrics.parquet (the held-out split's rows: the curves the edges are read from). The committed export was made
from the store Theory II's runs trained into (once carried in git as store_carry/, now gone).

    python3 paper_checks/reports/theory2/export_runs.py STORE
"""
from __future__ import annotations

import sys
from pathlib import Path

from critwin.paper_checks.run_export import collect_store, write_export

HERE = Path(__file__).resolve().parent

if __name__ == "__main__":
    if len(sys.argv) != 2 or not Path(sys.argv[1]).is_dir():
        sys.exit("usage: python3 export_runs.py STORE   (STORE: the folder of the store the runs trained into)")
    recs = collect_store(Path(sys.argv[1]), "store_carry")
    sizes = write_export(recs, HERE / "runs_export", splits=("ood",), environment=False)
    print(f"{len(recs)} runs; " + ", ".join(f"{k} {v / 1e6:.2f} MB" for k, v in sizes.items()))
