"""Executors run training configs somewhere and hand the results back as they finish.

Workers only compute; the submitting process writes the store, so no run is written twice
and no two writers meet. `local`: a process pool (spawn, one torch thread per worker);
`dask`: a dask.distributed Client on a scheduler address or a LocalCluster.
"""
from __future__ import annotations

import multiprocessing.context as mpc
import os
import signal
import sys
import threading
import time
import traceback
import warnings
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from dataclasses import dataclass

from critwin.errors import ConfigError, one_line_warning

EXECUTORS = ("local", "dask", "dask-local")
CONNECT_SECONDS = 10     # how long a Dask executor waits for its scheduler to answer


def _one_thread():
    import torch
    torch.set_num_threads(1)


def _exit_with_parent(parent: int, poll: float = 1.0):
    """Worker side: leave as soon as the submitting process is gone (e.g. killed with -9),
    instead of lingering as an orphan that holds memory."""
    def watch():
        while True:
            time.sleep(poll)
            if os.getppid() != parent:
                os._exit(1)
    threading.Thread(target=watch, daemon=True, name="exit-with-parent").start()


class QuietSpawnProcess(mpc.SpawnProcess):
    """A spawned process that starts with SIGINT ignored: a Ctrl-C to the terminal's process group is
    the parent's to handle, and reaches a worker still importing (before `_worker_init` runs) as an
    ignore it inherited, not as a KeyboardInterrupt traceback. The parent ignores SIGINT only while it
    starts the process (in the main thread; elsewhere a process starts as it would)."""

    def start(self):
        if threading.current_thread() is not threading.main_thread():
            return super().start()
        before = signal.signal(signal.SIGINT, signal.SIG_IGN)
        try:
            return super().start()
        finally:
            signal.signal(signal.SIGINT, before)


class QuietSpawnContext(mpc.SpawnContext):
    Process = QuietSpawnProcess


def _worker_init(parent: int, steps_queue=None):
    global _STEPS
    signal.signal(signal.SIGINT, signal.SIG_IGN)    # Ctrl-C is the parent's to handle (it ends the workers)
    warnings.formatwarning = one_line_warning
    from tqdm.auto import tqdm
    tqdm.set_lock(threading.RLock())    # a thread lock, not tqdm's default semaphore: a killed worker leaves
    #                                     no semaphore for the resource tracker to warn about
    _one_thread()
    _exit_with_parent(parent)
    _STEPS = steps_queue


STOP_GRACE = 120.0     # seconds a stopped pool waits for its workers to write their resume states


def _stop_workers(pool, grace: float | None = None) -> None:
    """Stop a pool's workers keeping what they trained: each gets SIGTERM, finishes its step and
    writes its run's resume state (loop.StopOnSignal); those not done within `grace` seconds
    ($CRITWIN_STOP_GRACE, else STOP_GRACE), or all of them at a second Ctrl-C, are killed."""
    procs = [p for p in list((getattr(pool, "_processes", None) or {}).values()) if p.is_alive()]
    grace = float(os.environ.get("CRITWIN_STOP_GRACE", STOP_GRACE)) if grace is None else grace
    futures = [w.future for w in list((getattr(pool, "_pending_work_items", None) or {}).values())]
    try:
        for p in procs:
            try:
                os.kill(p.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
        wait(futures, timeout=grace)
    finally:
        for p in procs:
            p.kill()
        pool.shutdown(wait=True, cancel_futures=True)     # quick: the workers are gone


class PoolBroken(Exception):
    """A worker process died (killed, e.g. by the out-of-memory killer): the pool is gone and
    `lost` holds the items that were in flight in it."""

    def __init__(self, lost: list):
        super().__init__(f"{len(lost)} runs lost with the worker pool")
        self.lost = lost


def _bounded(submit, items, in_flight: int, wait_some):
    """Submit at most `in_flight` items at a time, pulling the next one only when a result
    is handed back (so a claim is taken just before its run starts); yield results. A broken
    process pool raises PoolBroken with the items in flight (`items` can be resumed after)."""
    from concurrent.futures.process import BrokenProcessPool
    it = iter(items)
    pending = {}
    for x in it:
        pending[submit(x)] = x
        if len(pending) >= in_flight:
            break
    while pending:
        done, _ = wait_some(set(pending))
        for f in done:
            x = pending.pop(f)
            try:
                r = f.result()
            except BrokenProcessPool:
                raise PoolBroken([x, *pending.values()]) from None
            yield r
            nxt = next(it, _END)
            if nxt is not _END:
                pending[submit(nxt)] = nxt


@dataclass(frozen=True)
class Pack:
    """A worker task: resolved configs trained as one stacked model (empirical/engine.py),
    keeping its resume state in the file `resume` (None: it does not resume)."""
    configs: tuple
    resume: str | None = None


@dataclass(frozen=True)
class Pause:
    """Where a sweep pauses each run it trains alone (`loop.drive`'s until and stop_when): at step
    `until`, or at the first evaluation where `when(rows)` holds; the run is stored as paused, beside
    its resume state. `when` must pickle for a process pool (a module-level class, not a lambda)."""
    until: int | None = None
    when: object = None

    def settles(self, metrics, step: int) -> bool:
        """Whether a run trained to `step` with these metrics (step, split, metric, value) is where this
        pause leaves it."""
        return (self.until is not None and step >= self.until) or \
            (self.when is not None and bool(self.when(list(metrics.itertuples(index=False, name=None)))))


LOST = ("cut short when a worker process died (killed, e.g. out of memory, or a script that starts its sweep"
        ' outside `if __name__ == "__main__":`); not stored')


def lost_advice(n: int, resumable: int) -> str:
    """What to do about `n` lost runs of which `resumable` have a resume state to continue from."""
    if resumable == n:
        return "rerun to continue " + ("it from its resume state" if n == 1 else "them from their resume states")
    if resumable == 0:
        return ("rerun to train " + ("it" if n == 1 else "them") + " again ("
                + ("it had no resume state yet)" if n == 1 else "none had a resume state yet)"))
    return f"rerun to continue {resumable} from their resume states and train the other {n - resumable} again"


def lost_result(item):
    """What a run cut short by a dead worker pool comes back as: `lost`, not a failure of its own
    (the sweep stores nothing for it and keeps its resume state); a pack, or a list of items,
    comes back as a list of them."""
    if isinstance(item, Pack):
        item = list(item.configs)
    if isinstance(item, list):
        return [lost_result(x) for x in item]
    config = item[0] if isinstance(item, tuple) else item
    return {"config": config, "lost": LOST}


_END = object()


_STEPS = None    # where a worker reports training steps done: a queue to the parent, or a callable in-process


def _report_steps(n: int) -> None:
    if _STEPS is None:
        return
    if callable(_STEPS):
        _STEPS(n)
    else:
        _STEPS.put(n)


def run_config(item) -> dict:
    """Worker task: train one resolved config, or (config, checkpoint or None, resume file or
    None[, Pause]) for a run trained alone; never raises (errors come back as data, and a run
    paused by its Pause as {"paused": step, "run": the Run so far}, its resume state kept)."""
    from critwin.empirical.config import TrainConfig
    from critwin.empirical.loop import Paused
    from critwin.empirical.train import train
    config, start, resume, pause = (item + (None,))[:4] if isinstance(item, tuple) else (item, None, None, None)
    pause = pause or Pause()
    try:
        _one_thread()
        return {"config": config, "run": train(TrainConfig.from_dict(config), progress=False,
                                               on_steps=_report_steps, start=start, resume=resume,
                                               until=pause.until, stop_when=pause.when)}
    except Paused as p:
        return {"config": config, "paused": p.step, "run": p.run}
    except Exception as e:  # noqa: BLE001 - a failed run is recorded, not raised
        return {"config": config, "error": f"{type(e).__name__}: {e}",
                "traceback": traceback.format_exc()}


def run_pack(item) -> list[dict]:
    """Worker task: train a Pack as one stacked model, or a list of runs trained alone as
    `run_config` does; one result per config, never raises. A pack that fails is trained again
    member by member, so a bad config fails only itself."""
    from critwin.empirical.config import TrainConfig
    from critwin.empirical.engine import train_pack
    if not isinstance(item, Pack):
        return [run_config(x) for x in item]
    try:
        _one_thread()
        runs = train_pack([TrainConfig.from_dict(c) for c in item.configs], progress=False, on_steps=_report_steps,
                          resume=item.resume)
        return [{"config": c, "run": r} for c, r in zip(item.configs, runs)]
    except Exception as e:  # noqa: BLE001 - failed runs are recorded, not raised
        if len(item.configs) > 1:      # each member alone; the pack's own error travels with each result
            why = f"{type(e).__name__}: {e}"
            return [{**out, "pack_error": why} for c in item.configs for out in run_pack(Pack((c,)))]
        return [{"config": item.configs[0], "error": f"{type(e).__name__}: {e}", "traceback": traceback.format_exc()}]


def _pack_size(pack):
    if pack is not None and (isinstance(pack, bool) or not isinstance(pack, int) or pack < 1):
        raise ConfigError("pack", pack, "a positive number of runs trained as one stacked model, or None")
    return pack


class LocalExecutor:
    """A process pool; workers = 1 runs in this process (no pickling, easy debugging)."""

    def __init__(self, workers: int | None = None, pack: int | None = None):
        workers = (os.cpu_count() or 1) if workers is None else workers
        if workers < 1:
            raise ConfigError("workers", workers, "a positive number of worker processes")
        self.workers, self.pack = workers, _pack_size(pack)

    def imap(self, fn, items, on_steps=None):
        """Results as they finish; on_steps(n), if given, hears the training steps done inside
        the runs (so a long run shows progress, not only finished runs)."""
        global _STEPS
        if self.workers == 1:
            _STEPS = on_steps
            try:
                for it in items:
                    yield fn(it)
            finally:
                _STEPS = None
            return
        import queue as queue_mod
        ctx = QuietSpawnContext()
        steps_queue = ctx.Queue() if on_steps is not None else None

        def wait_some(pending):
            while True:
                done, rest = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
                while steps_queue is not None:
                    try:
                        on_steps(steps_queue.get_nowait())
                    except queue_mod.Empty:
                        break
                if done:
                    return done, rest
        items = iter(items)
        from critwin.empirical.loop import StopOnSignal
        with StopOnSignal(at_once=True):    # SIGTERM too stops the workers as Ctrl-C does, not this process alone
            yield from self._pool_results(ctx, steps_queue, fn, items, wait_some)

    def _pool_results(self, ctx, steps_queue, fn, items, wait_some):
        while True:      # a fresh pool after a worker died; the runs in flight come back lost
            pool = ProcessPoolExecutor(self.workers, mp_context=ctx, initializer=_worker_init,
                                       initargs=(os.getpid(), steps_queue))
            try:
                yield from _bounded(lambda x: pool.submit(fn, x), items, self.workers, wait_some)
                pool.shutdown()
                return
            except PoolBroken as e:
                pool.shutdown()
                for x in e.lost:
                    yield lost_result(x)
            except BaseException:   # Ctrl-C, SIGTERM, or the caller stopped: the workers stop too
                _stop_workers(pool)
                raise

    def close(self):
        pass


class DaskExecutor:
    """dask.distributed: `address` of a running scheduler, or a LocalCluster of `workers`."""

    def __init__(self, address: str | None = None, workers: int | None = None, pack: int | None = None):
        self.pack = _pack_size(pack)
        try:
            from dask.distributed import Client, LocalCluster
        except ImportError:  # pragma: no cover - dask is a dependency
            raise ConfigError("executor", "dask", "install dask[distributed]") from None
        self.cluster = None
        if address is not None:
            check_scheduler_address(address)
        if address is None:
            self.cluster = LocalCluster(n_workers=workers or os.cpu_count() or 1, threads_per_worker=1,
                                        processes=True, dashboard_address=None)
            address = self.cluster
        try:
            self.client = Client(address, timeout=CONNECT_SECONDS)
        except (OSError, TimeoutError) as e:
            raise ConfigError("scheduler", address, f"the address of a running Dask scheduler (none answered within"
                                                    f" {CONNECT_SECONDS} s: {type(e).__name__})") from None
        self.address = address

    @property
    def workers(self) -> int:
        """Worker threads on the cluster now (one run or pack each)."""
        return max(1, sum(self.client.nthreads().values()))

    def imap(self, fn, items, on_steps=None):
        """Results as they finish (on_steps is not reported from Dask workers)."""
        from dask.distributed import wait as dask_wait
        if not self.client.nthreads():
            print(f"critwin: waiting for Dask workers to join the scheduler {self.address}", file=sys.stderr,
                  flush=True)
            self.client.wait_for_workers(1)
        n = self.workers

        def wait_some(pending):
            done, rest = dask_wait(list(pending), return_when="FIRST_COMPLETED")
            return set(done), set(rest)
        yield from _bounded(lambda x: self.client.submit(fn, x, pure=False), items, n, wait_some)

    def close(self):
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def check_scheduler_address(address) -> None:
    """Refuse (ConfigError) an address no Dask scheduler can have: an unknown scheme (http://...), or
    a host and port that do not parse (nonsense::), before any connection is tried."""
    from distributed.comm.addressing import parse_address, parse_host_port
    from distributed.comm.registry import backends
    example = "SCHEME://HOST:PORT, e.g. tcp://127.0.0.1:8786"
    try:
        scheme, loc = parse_address(str(address))
    except (ValueError, TypeError) as e:
        raise ConfigError("scheduler", address, f"a Dask scheduler address {example} ({e})") from None
    if scheme not in backends:
        raise ConfigError("scheduler", address, f"a Dask scheduler address {example}; the scheme is one of "
                                                + ", ".join(sorted(backends)))
    if scheme in ("tcp", "tls", "ws", "wss"):
        try:
            parse_host_port(loc)
        except (ValueError, TypeError) as e:
            raise ConfigError("scheduler", address, f"a Dask scheduler address {example} ({e})") from None


def make_executor(kind: str = "local", workers: int | None = None, scheduler: str | None = None,
                  pack: int | None = None):
    """pack: members per stacked pack (empirical/engine.py); None: the default of the runs' device."""
    if kind not in EXECUTORS:
        raise ConfigError("executor", kind, "one of " + ", ".join(EXECUTORS))
    if kind == "local":
        return LocalExecutor(workers, pack)
    if kind == "dask":
        if not scheduler:
            raise ConfigError("scheduler", scheduler, "a Dask scheduler address (tcp://host:8786) with --executor dask")
        return DaskExecutor(scheduler, pack=pack)
    return DaskExecutor(None, workers, pack)
