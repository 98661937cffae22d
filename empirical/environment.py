"""What a run records about where it ran: versions, git commit, device."""
from __future__ import annotations

import platform
import subprocess
import sys
from pathlib import Path

import numpy as np
import torch


def git_commit() -> dict:
    """Commit and dirty flag of the critwin source tree, or 'unknown' outside a checkout."""
    root = Path(__file__).resolve().parents[1]
    try:
        sha = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                             text=True, timeout=10, check=True).stdout.strip()
        dirty = bool(subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                    capture_output=True, text=True, timeout=10).stdout.strip())
        return {"git_commit": sha, "git_dirty": dirty}
    except (OSError, subprocess.SubprocessError):
        return {"git_commit": "unknown", "git_dirty": None}


def environment(device: str) -> dict:
    import pandas

    import critwin
    env = {"python": sys.version.split()[0], "platform": platform.platform(),
           "machine": platform.machine(), "critwin": critwin.__version__,
           "torch": torch.__version__, "numpy": np.__version__, "pandas": pandas.__version__,
           "device": device, "torch_threads": torch.get_num_threads(), **git_commit()}
    if device == "cuda" and torch.cuda.is_available():
        env["cuda_device"] = torch.cuda.get_device_name(0)
    return env
