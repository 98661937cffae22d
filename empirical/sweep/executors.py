"""Executors run training configs somewhere and hand the results back as they finish.

Workers only compute; the submitting process writes the store, so no run is written twice
and no two writers meet. `local`: a process pool (spawn, one torch thread per worker);
`dask`: a dask.distributed Client on a scheduler address or a LocalCluster.
"""
from __future__ import annotations

import os
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed

from ...errors import ConfigError

EXECUTORS = ("local", "dask", "dask-local")


def _one_thread():
    import torch
    torch.set_num_threads(1)


def run_config(config: dict) -> dict:
    """Worker task: train one resolved config; never raises (errors come back as data)."""
    from ..config import TrainConfig
    from ..train import train
    try:
        _one_thread()
        return {"config": config, "run": train(TrainConfig.from_dict(config), progress=False)}
    except Exception as e:  # noqa: BLE001 - a failed run is recorded, not raised
        return {"config": config, "error": f"{type(e).__name__}: {e}",
                "traceback": traceback.format_exc()}


class LocalExecutor:
    """A process pool; workers = 1 runs in this process (no pickling, easy debugging)."""

    def __init__(self, workers: int | None = None):
        workers = (os.cpu_count() or 1) if workers is None else workers
        if workers < 1:
            raise ConfigError("workers", workers, "a positive number of worker processes")
        self.workers = workers

    def imap(self, fn, items):
        if self.workers == 1:
            for it in items:
                yield fn(it)
            return
        import multiprocessing as mp
        with ProcessPoolExecutor(self.workers, mp_context=mp.get_context("spawn"),
                                 initializer=_one_thread) as pool:
            futures = [pool.submit(fn, it) for it in items]
            for f in as_completed(futures):
                yield f.result()

    def close(self):
        pass


class DaskExecutor:
    """dask.distributed: `address` of a running scheduler, or a LocalCluster of `workers`."""

    def __init__(self, address: str | None = None, workers: int | None = None):
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError:  # pragma: no cover - dask is a dependency
            raise ConfigError("executor", "dask", "install dask[distributed]") from None
        self.cluster = None
        if address is None:
            self.cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                                        processes=True, dashboard_address=None)
            address = self.cluster
        self.client = Client(address)

    def imap(self, fn, items):
        from dask.distributed import as_completed as dask_completed
        futures = self.client.map(fn, list(items), pure=False)
        for f in dask_completed(futures):
            yield f.result()

    def close(self):
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def make_executor(kind: str = "local", workers: int | None = None, scheduler: str | None = None):
    if kind not in EXECUTORS:
        raise ConfigError("executor", kind, "one of " + ", ".join(EXECUTORS))
    if kind == "local":
        return LocalExecutor(workers)
    if kind == "dask":
        if not scheduler:
            raise ConfigError("scheduler", scheduler, "a Dask scheduler address (tcp://host:8786) with --executor dask")
        return DaskExecutor(scheduler)
    return DaskExecutor(None, workers)
