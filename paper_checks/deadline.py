"""A subprocess run under a job's wall-clock deadline, as the GPU jobs need: never started with under 5 s left,
stopped at the deadline (a training it stops keeps its resume state)."""
from __future__ import annotations

import subprocess
import time


def run_before(cmd: list[str], deadline: float) -> subprocess.CompletedProcess | str:
    """The finished process, or "not run" (under 5 s left) or "stopped" (the deadline came first)."""
    left = deadline - time.time()
    if left < 5:
        return "not run"
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=left)
    except subprocess.TimeoutExpired:
        return "stopped"


def last_error_line(r: subprocess.CompletedProcess) -> str | None:
    """The last line of a process's stderr, or None when it wrote none."""
    text = r.stderr.strip()
    return text.splitlines()[-1] if text else None
