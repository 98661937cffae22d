"""Export a store's runs into this folder's small files (`paper_checks/run_export.py`: metrics rows, configs,
summaries; no checkpoints or resume states), so that the checks and reports read them without the store.

    python3 export_runs.py STORE                      # runs_authors/ with every run of STORE added or replaced
    python3 export_runs.py STORE --into runs_stones   # the stone-token runs' export instead

Two exports, each file under 1 MB: runs_authors/ (the long run at the authors' recipe, S6's frozen branches at it,
seed 1, bf16 seed 0, the authors' tiny model) and runs_stones/ (the stone-token runs of S3, S4, S5 and S6 at cpu
size). `python3 -c "from critwin.paper_checks.run_export import rebuild_store; rebuild_store(['runs_authors'],
'STORE')"` writes a store back from them (what `rejudge.sh` does).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from critwin.paper_checks.run_export import collect_store, export_records, write_export

HERE = Path(__file__).resolve().parent
EXPORTS = ("runs_authors", "runs_stones")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("store", type=Path, help="the store whose run folders are exported")
    ap.add_argument("--into", choices=EXPORTS, default="runs_authors", help="which export (default: runs_authors)")
    a = ap.parse_args(argv)
    if not a.store.is_dir():
        ap.error(f"store={str(a.store)!r} is invalid: not a folder")
    new = collect_store(a.store, "store")
    keep = [r for r in export_records(HERE / a.into) if r["run_id"] not in {n["run_id"] for n in new}]
    sizes = write_export(keep + new, HERE / a.into)
    print(f"{a.into}: {len(keep) + len(new)} runs ({len(new)} from {a.store}); "
          + ", ".join(f"{k} {v / 1e6:.2f} MB" for k, v in sizes.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
