"""A subprocess run under a job's wall-clock deadline, as the GPU jobs need: never started with under 5 s left,
stopped at the deadline (a training it stops keeps its resume state)."""
from __future__ import annotations

import subprocess
import time


def run_before(cmd: list[str], deadline: float, grace: float = 30.0, cwd=None) -> subprocess.CompletedProcess | str:
    """The finished process, or "not run" (under 5 s left) or "stopped" (the deadline came first: the process gets
    SIGTERM, so a training saves its resume state, and SIGKILL only if it has not exited `grace` seconds later)."""
    left = deadline - time.time()
    if left < 5:
        return "not run"
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=cwd)
    try:
        out, err = p.communicate(timeout=left)
    except subprocess.TimeoutExpired:
        p.terminate()
        try:
            p.communicate(timeout=grace)
        except subprocess.TimeoutExpired:
            p.kill()
            p.communicate()
        return "stopped"
    return subprocess.CompletedProcess(cmd, p.returncode, out, err)


def last_error_line(r: subprocess.CompletedProcess) -> str | None:
    """The last line of a process's stderr, or None when it wrote none."""
    text = r.stderr.strip()
    return text.splitlines()[-1] if text else None
