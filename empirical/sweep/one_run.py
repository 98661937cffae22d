"""One run into a store: the claim, train, save, release sequence that a sweep (runner.py, with
its training in worker processes) and `critwin train` (in this process) share."""
from __future__ import annotations

from critwin.empirical.config import TrainConfig
from critwin.empirical.loop import Paused
from critwin.empirical.store import Run, RunStore
from critwin.empirical.train import train

from critwin.errors import ConfigError, RunNotStoredError

STORED = ("complete", "failed", "diverged")    # statuses a run is returned with from the store, not trained


def branch_start(store: RunStore, cfg: TrainConfig) -> dict | None:
    """The checkpoint a branch starts from (RunStore.checkpoint raises, naming the checkpoints the
    source has, when that one is missing); None for a run from step 0."""
    return store.checkpoint(*cfg.branch_point()) if cfg.branch else None


def store_paused(store: RunStore, run: Run | None) -> None:
    """Save the part of a run trained before its pause (status 'paused', over an earlier pause's
    folder), keeping its resume state: the next training of its config continues from there."""
    if run is not None:
        store.save(run, replace=store.status(run.run_id) is not None)


def store_trained(store: RunStore, run: Run, replace: bool) -> None:
    """Save a trained run (`replace`: over a damaged or failed folder) and drop the resume state
    it no longer needs."""
    store.save(run, replace=replace)
    store.drop_resume(run.run_id)


def train_and_store(cfg: TrainConfig, store: RunStore, progress: bool = True, trainer=train,
                    until: int | None = None, stop_when=None) -> tuple[Run, str | None]:
    """`cfg`'s run: from `store` when stored (complete, failed or diverged), else trained here:
    claimed (a ConfigError when another live process holds it), trained (continuing from its
    resume state after a kill; a branch from its source's checkpoint), saved (replacing a damaged
    folder), released. Returns the run and its status in the store before: None (not stored),
    'corrupt' (replaced) or one of STORED (returned as stored). `trainer`: what trains it, with
    `train`'s signature (the caller's own, so a test can stand in for it). `until`: pause the training
    at that step, its resume state kept and what was trained stored with status 'paused' (then
    `loop.Paused` is raised); `stop_when` pauses it the same way at the first evaluation where it
    holds on the run's rows. A paused run is trained on (and replaced) by the next call."""
    run_id = cfg.run_id()
    status = store.status(run_id)
    if status in STORED:
        return store.load(run_id), status
    if not store.claim(run_id):
        raise ConfigError("run", run_id, f"a run no other process is training (process {store.holder(run_id) or '?'}"
                                         f" holds its claim file in {store.root}; wait for it to finish)")
    try:
        try:
            run = trainer(cfg, progress=progress, start=branch_start(store, cfg), resume=store.resume_path(run_id),
                          until=until, stop_when=stop_when)
        except Paused as p:
            store_paused(store, p.run)
            raise
        try:
            store_trained(store, run, replace=status in ("corrupt", "paused"))
        except OSError as e:        # a full disk at the end: say what failed and what is left to continue from
            raise not_stored(store, run_id, e) from None
    finally:
        store.release(run_id)
    return run, status


def not_stored(store: RunStore, run_id: str, err: OSError) -> RunNotStoredError:
    """The error of a trained run that `store` could not take: the path that failed, and its resume state."""
    reason = f"{err.strerror or err} writing {err.filename or store.path(run_id)}"
    part = store.partial(run_id)
    where = store.resume_path(run_id)
    resume = (f"its resume state {where} holds step {part[1]} of {part[2]} (the same command continues from there"
              " once there is room)" if part is not None else
              "it has no resume state (the same command trains it again once there is room)")
    return RunNotStoredError(run_id, reason, resume)
