"""The repository carries code and small results only: no checkpoint, resume state, claim or temporary file, no
run folder and no file over 1 MB (every clone carries a committed file forever; stores live outside git)."""
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MAX_BYTES = 1_000_000
CHECKPOINT_SUFFIXES = (".pt", ".pth", ".ckpt", ".safetensors", ".npz", ".pkl")
RUN_FILES = {"config.json", "summary.json", "environment.json"}


def tracked() -> list[str]:
    try:
        out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        pytest.skip("not a git checkout")
    return [p for p in out.stdout.decode().split("\0") if p]


def offenders(files: list[str]) -> list[str]:
    bad = []
    folders: dict[str, set] = {}
    for f in files:
        name = f.rsplit("/", 1)[-1]
        if name.endswith(CHECKPOINT_SUFFIXES) or name.startswith((".claim-", ".pack-resume-")) or "resume" in name \
                or name.endswith((".part", ".tmp")):
            bad.append(f"{f}: a checkpoint, resume, claim or temporary file")
        path = ROOT / f
        if path.is_file() and path.stat().st_size > MAX_BYTES:
            bad.append(f"{f}: {path.stat().st_size:,} bytes (over 1 MB)")
        folders.setdefault(f.rsplit("/", 1)[0] if "/" in f else "", set()).add(name)
    bad += [f"{d}/: a run folder ({', '.join(sorted(RUN_FILES))})" for d, names in folders.items() if RUN_FILES <= names]
    return bad


def test_no_checkpoint_store_or_large_file_is_tracked():
    assert offenders(tracked()) == []


def test_the_rule_catches_each_kind():
    files = ["a/model.pt", "b/.claim-0123", "c/.pack-resume-x.pt", "d/run/config.json", "d/run/summary.json",
             "d/run/environment.json", "e/ok.csv"]
    out = offenders(files)
    assert len(out) == 4 and not any(o.startswith("e/") for o in out)
    assert offenders(["paper_checks/reports/x/checkpoint-1.pt"])               # a checkpoint anywhere
    assert offenders(["README.md"]) == [] and MAX_BYTES == 1_000_000
