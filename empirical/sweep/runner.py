"""Run a list of configs into a store: skip what is done, record failures, resume."""
from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd
from tqdm.auto import tqdm

from ..config import TrainConfig
from ..environment import environment
from ..store import Run, RunStore
from .executors import LocalExecutor, run_config


@dataclass
class SweepResult:
    total: int
    skipped: list = field(default_factory=list)    # run ids already complete
    done: list = field(default_factory=list)       # trained now, complete
    failed: list = field(default_factory=list)     # (run id, error) trained now, failed or diverged

    def to_dict(self) -> dict:
        return {"total": self.total, "skipped": len(self.skipped), "done": len(self.done),
                "failed": len(self.failed), "failures": [{"run_id": r, "error": e} for r, e in self.failed]}


def failed_run(config: dict, error: str, tb: str = "") -> Run:
    empty = pd.DataFrame({"step": pd.Series(dtype="int64"), "split": pd.Series(dtype=str),
                          "metric": pd.Series(dtype=str), "value": pd.Series(dtype=float)})
    return Run(config, empty, {"status": "failed", "error": error, "traceback": tb, "final": {}},
               environment(config.get("device", "cpu")))


def pending(configs, store: RunStore, retry_failed: bool = False):
    """(to run, already complete): failed runs are re-run only with retry_failed."""
    todo, skip = [], []
    for c in configs:
        st = store.status(c.run_id())
        if st == "complete" or (st is not None and not retry_failed):
            skip.append(c.run_id())
        else:
            todo.append(c)
    return todo, skip


def run_sweep(configs: list[TrainConfig], store: RunStore, executor=None, retry_failed: bool = False,
              progress: bool = True) -> SweepResult:
    """Train every config not yet in `store`; the store is written here, one run at a time."""
    executor = executor or LocalExecutor()
    store.clean_stale()
    todo, skip = pending(configs, store, retry_failed)
    res = SweepResult(len(configs), skipped=skip)
    bar = tqdm(total=len(configs), initial=len(skip), desc="sweep", unit="run", disable=not progress)
    bar.set_postfix(done=0, failed=0, remaining=len(todo))
    for out in executor.imap(run_config, [c.resolved() for c in todo]):
        run = out.get("run") or failed_run(out["config"], out["error"], out.get("traceback", ""))
        store.save(run, replace=retry_failed)
        if run.summary["status"] == "complete":
            res.done.append(run.run_id)
        else:
            res.failed.append((run.run_id, run.summary.get("error")))
        bar.update(1)
        bar.set_postfix(done=len(res.done), failed=len(res.failed),
                        remaining=len(todo) - len(res.done) - len(res.failed))
    bar.close()
    return res
