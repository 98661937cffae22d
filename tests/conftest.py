import os
import shutil
import signal
import subprocess

import numpy as np
import pytest

from critwin.theory import StylisedSetting, build_problem


@pytest.fixture
def small():
    """A small setting that integrates in well under a second."""
    return StylisedSetting(d=8, keys=4, anchors=4, train_pairs=10, gamma=0.8, eta=1e-2,
                           embeddings="unit", seed=3)


@pytest.fixture
def small_problem(small):
    return build_problem(small)


@pytest.fixture(autouse=True, scope="session")
def _one_torch_thread():
    """One torch thread in the test process: on a busy 2-core machine two threads made small
    matmuls up to 100x slower (measured)."""
    import torch
    torch.set_num_threads(1)


@pytest.fixture
def sigint_default():
    """SIGINT raises KeyboardInterrupt in this process during the test, as in a terminal, even when the
    suite was started with SIGINT ignored (`nohup pytest &`); the handling before is put back after."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


@pytest.fixture
def small_disk(tmp_path):
    """A 600 KB tmpfs (needs root; skipped elsewhere)."""
    mnt = tmp_path / "disk"
    mnt.mkdir()
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=600k", "tmpfs", str(mnt)], capture_output=True)
    if r.returncode:
        pytest.skip(f"cannot mount a tmpfs here ({r.stderr.decode().strip()})")
    yield mnt
    subprocess.run(["umount", "-l", str(mnt)])


from critwin.testing import task_kit  # noqa: E402,F401  (the kit's fixture, as a user's conftest would take it)


def pytest_xdist_auto_num_workers(config):
    """`-n auto` (pyproject's addopts): one test process per core, at most 4. Each holds one torch
    thread, and several tests start two training workers of their own, so more would oversubscribe."""
    import os
    return max(1, min(4, len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1))
