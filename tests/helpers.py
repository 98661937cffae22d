"""Numerical helpers shared by the tests."""
import numpy as np


def finite_diff_hessian(f, x0: np.ndarray, h: float = 1e-5) -> np.ndarray:
    """Hessian of scalar f at x0 by central differences of f."""
    n = x0.size
    H = np.zeros((n, n))
    for i in range(n):
        for j in range(i, n):
            def at(si, sj):
                x = x0.copy()
                x[i] += si * h
                x[j] += sj * h
                return f(x)
            H[i, j] = H[j, i] = (at(1, 1) - at(1, -1) - at(-1, 1) + at(-1, -1)) / (4 * h * h)
    return H


def save_fake_run(store, cfg, ood: float):
    """Store a run of `cfg` with a hand-set final OOD accuracy (for aggregation tests)."""
    import pandas as pd

    from critwin.empirical import Run
    metrics = pd.DataFrame({"step": [cfg.steps], "split": ["ood"], "metric": ["acc"], "value": [ood]})
    return store.save(Run(cfg.resolved(), metrics, {"status": "complete", "final": {"ood_acc": ood}}, {}))


def exit_on_three(x):
    """A worker task that kills its own process on item 3 (as the out-of-memory killer would)."""
    import os
    import time
    if x == 3:
        os._exit(1)
    time.sleep(0.3)
    return x


class Killed(Exception):
    """Stands for a kill in the middle of training (raised by `kill_after`)."""


def kill_after(step: int):
    """An on_steps callback that raises Killed once `step` training steps are done."""
    done = [0]

    def on_steps(n):
        done[0] += n
        if done[0] >= step:
            raise Killed
    return on_steps


def default_sigint():
    """A child's preexec_fn: SIGINT at its default, so the child (Python) turns it into KeyboardInterrupt.
    A background job of a non-interactive shell (`nohup pytest &`) starts with SIGINT ignored, an ignore
    that children inherit and Python keeps; a test that sends SIGINT sets the handling it needs."""
    import signal
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def pool_workers(parent: int) -> list[int]:
    """The spawned pool workers of `parent` (not its resource tracker)."""
    from pathlib import Path
    out = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            stat = (d / "stat").read_text()
            cmd = (d / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if int(stat.rsplit(")", 1)[1].split()[1]) == parent and "spawn_main" in cmd:
            out.append(int(d.name))
    return out


def cpu_seconds(pid: int) -> float:
    """User + system CPU seconds of a process so far (0 once it is gone)."""
    import os
    from pathlib import Path
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
