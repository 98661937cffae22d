"""Whether each measured run trained after its predictions were registered, by the clock a reader can check: the
git commit that trained the run holds the registration, predictions unchanged. A run trained by a commit without it
(or with other predictions) cannot count as a prediction's test; a commit this checkout lacks cannot be checked."""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pandas as pd

AFTER, BEFORE, UNKNOWN = "after", "before", "unknown"


def _git(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True, timeout=60)


def _same(registered: str, held: str, name: str) -> bool:
    """Whether a file at the run's commit registers the same predictions as the file as it stands now."""
    if name.endswith(".json"):
        keys = ("registered", "commit", "methods", "baselines", "cells")
        a, b = json.loads(registered), json.loads(held)
        return all(a.get(k) == b.get(k) for k in keys)
    return registered == held


def commit_status(registration: Path, commits) -> dict:
    """{commit: AFTER | BEFORE | UNKNOWN}: AFTER when the commit's tree holds `registration` and the per-run
    predictions beside it (registration_runs.csv, where there is one) with the same predictions as now."""
    registration = Path(registration).resolve()
    files = [registration] + [p for p in [registration.parent / "registration_runs.csv"] if p.is_file()]
    top = _git(registration.parent, "rev-parse", "--show-toplevel")
    out = {}
    for commit in commits:
        commit = str(commit)
        if top.returncode != 0 or _git(registration.parent, "cat-file", "-e", f"{commit}^{{commit}}").returncode != 0:
            out[commit] = UNKNOWN
            continue
        status = AFTER
        for f in files:
            rel = f.relative_to(Path(top.stdout.strip()).resolve()).as_posix()
            held = _git(registration.parent, "show", f"{commit}:{rel}")
            if held.returncode != 0 or not _same(f.read_text(), held.stdout, f.name):
                status = BEFORE
                break
        out[commit] = status
    return out


def run_provenance(registration, measured: pd.DataFrame) -> pd.Series:
    """Each measured run's status (AFTER / BEFORE / UNKNOWN) from its `commit` column (none: UNKNOWN)."""
    if "commit" not in measured or not len(measured):
        return pd.Series(UNKNOWN, index=measured.index)
    status = commit_status(registration, measured["commit"].dropna().astype(str).unique())
    return measured["commit"].map(lambda c: status.get(str(c), UNKNOWN) if pd.notna(c) else UNKNOWN)


__all__ = ["AFTER", "BEFORE", "UNKNOWN", "commit_status", "run_provenance"]
