"""Export the runs carried in this folder into small files (`paper_checks/run_export.py`), so that the checks and
reports read them after the carried stores and states are gone from the repository.

    python3 export_runs.py            # from the carried folders beside this file: writes runs_stones/, runs_authors/
    python3 export_runs.py --from-store STORE   # runs_authors/ with every run of STORE added or replaced
    python3 export_runs.py --check    # re-read the carried folders and say whether the exports still match them

Two exports, each file under 1 MB:
  runs_stones/   stone_store/ (the stone-token runs of S3, S4, S5 and S6 at cpu size)
  runs_authors/  carry/ (the long run, seed 0, complete), s6_store/ (S6's frozen branches at the authors' recipe),
                 and the runs carried only as resume states: carry_seed1/ (seed 1), carry_bf16/ (bf16 seed 0),
                 carry_tiny/ (the authors' tiny model)
`python3 -c "from critwin.paper_checks.run_export import rebuild_store; rebuild_store(['runs_authors'], 'STORE')"`
writes a store back from them (what `rejudge.sh` does).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from critwin.paper_checks.run_export import (
    collect_resume_state,
    collect_store,
    export_records,
    read_export,
    write_export,
)

HERE = Path(__file__).resolve().parent
EXPORTS = {
    "runs_stones": [("store", "stone_store")],
    "runs_authors": [("store", "carry"), ("store", "s6_store"), ("state", "carry_seed1/state.pt"),
                     ("state", "carry_bf16/state.pt"), ("state", "carry_tiny/state.pt")],
}


def records(parts) -> list[dict]:
    out = []
    for kind, rel in parts:
        path = HERE / rel
        if kind == "store":
            out += collect_store(path, rel)
        else:
            out.append(collect_resume_state(path, rel.split("/")[0]))
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare the exports with the carried folders; write nothing")
    ap.add_argument("--from-store", type=Path, default=None,
                    help="add (or replace) every run folder of this store in runs_authors/, keeping the others")
    a = ap.parse_args(argv)
    if a.from_store is not None:
        new = collect_store(a.from_store, "store")
        keep = [r for r in export_records(HERE / "runs_authors") if r["run_id"] not in {n["run_id"] for n in new}]
        sizes = write_export(keep + new, HERE / "runs_authors")
        print(f"runs_authors: {len(keep) + len(new)} runs; " + ", ".join(f"{k} {v / 1e6:.2f} MB" for k, v in sizes.items()))
        return 0
    bad = 0
    for name, parts in EXPORTS.items():
        recs = records(parts)
        if a.check:
            _, metrics, recs_out = read_export(HERE / name)
            same = set(recs_out) == {r["run_id"] for r in recs} and len(metrics) == sum(len(r["metrics"]) for r in recs)
            print(f"{name}: {'matches' if same else 'DIFFERS FROM'} the carried folders ({len(recs)} runs)")
            bad += not same
        else:
            sizes = write_export(recs, HERE / name)
            print(f"{name}: {len(recs)} runs; " + ", ".join(f"{k} {v / 1e6:.2f} MB" for k, v in sizes.items()))
    return int(bad > 0)


if __name__ == "__main__":
    sys.exit(main())
