"""Run a list of configs into a store: skip what is done, record failures, resume.

A run is claimed just before it is handed to a worker and released once saved, so two
sweeps on one store (or on many machines sharing it) train each run once between them.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass, field

import pandas as pd
from critwin.empirical.config import TrainConfig
from critwin.empirical.engine import pack_size, packs
from critwin.empirical.steppers import choose_stepper
from critwin.empirical.environment import environment
from critwin.empirical.store import Run, RunStore
from critwin.empirical.sweep.executors import LOST, LocalExecutor, Pack, Pause, lost_advice, run_pack
from critwin.empirical.sweep.one_run import branch_start, store_paused, store_trained
from tqdm.auto import tqdm

from critwin.errors import ConfigError, CorruptRunError


@dataclass
class SweepResult:
    total: int
    skipped: list = field(default_factory=list)    # run ids already complete
    done: list = field(default_factory=list)       # trained now, complete
    failed: list = field(default_factory=list)     # (run id, error) trained now, failed or diverged
    repaired: list = field(default_factory=list)   # run ids whose damaged folder was replaced
    busy: list = field(default_factory=list)       # run ids another live process was training
    lost: list = field(default_factory=list)       # run ids cut short by a dead worker: not stored
    lost_resumable: list = field(default_factory=list)  # those of them with a resume state to continue from
    paused: list = field(default_factory=list)     # (run id, step) paused by the sweep's Pause: stored as paused
    unstored: list = field(default_factory=list)   # (run id, reason) trained but not written (e.g. a full disk)
    pack_fallbacks: list = field(default_factory=list)  # (run id, the error that made its pack train it alone)

    @property
    def lost_any(self) -> bool:
        """Runs trained (or half trained) now that are not in the store: the sweep's exit code says so."""
        return bool(self.lost or self.unstored)

    def to_dict(self) -> dict:
        return {"total": self.total, "skipped": len(self.skipped), "done": len(self.done),
                "failed": len(self.failed), "repaired": len(self.repaired), "busy": len(self.busy),
                "lost": len(self.lost), "lost_resumable": len(self.lost_resumable), "paused": len(self.paused), "not_stored": len(self.unstored),
                "pack_fallbacks": len(self.pack_fallbacks),
                "failures": [{"run_id": r, "error": e} for r, e in self.failed],
                "not_stored_runs": [{"run_id": r, "reason": e} for r, e in self.unstored],
                "pack_fallback_runs": [{"run_id": r, "error": e} for r, e in self.pack_fallbacks],
                "repaired_ids": list(self.repaired), "busy_ids": list(self.busy), "lost_ids": list(self.lost),
                "paused_runs": [{"run_id": r, "step": s} for r, s in self.paused]}

    def describe(self) -> str:
        text = (f"{self.total} runs: {len(self.done)} trained, {len(self.skipped)} already stored,"
                f" {len(self.failed)} failed")
        if self.repaired:
            text += f", {len(self.repaired)} damaged folders replaced"
        if self.busy:
            text += f", {len(self.busy)} left to another process that is training them"
        if self.lost:
            text += f", {len(self.lost)} {LOST}: {lost_advice(len(self.lost), len(self.lost_resumable))}"
        if self.paused:
            text += f", {len(self.paused)} paused (stored as paused with their resume states: a sweep without the" \
                " pause continues them)"
        if self.unstored:
            text += f", {len(self.unstored)} trained but not stored ({self.unstored[0][1]})"
        if self.pack_fallbacks:
            text += f"; {len(self.pack_fallbacks)} trained alone after their pack failed ({self.pack_fallbacks[0][1]})"
        return text


def failed_run(config: dict, error: str, tb: str = "") -> Run:
    empty = pd.DataFrame({"step": pd.Series(dtype="int64"), "split": pd.Series(dtype=str),
                          "metric": pd.Series(dtype=str), "value": pd.Series(dtype=float)})
    return Run(config, empty, {"status": "failed", "error": error, "traceback": tb, "final": {}},
               environment(config.get("device", "cpu")))


def pending(configs, store: RunStore, retry_failed: bool = False):
    """(to run, already stored, damaged, paused): failed runs are re-run only with retry_failed; a
    damaged folder (unreadable, half a run) is always re-run and replaced, and so is a paused run's
    (trained on from its resume state)."""
    todo, skip, damaged, paused = [], [], [], []
    for c in configs:
        st = store.status(c.run_id())
        if st in ("corrupt", "paused"):
            (damaged if st == "corrupt" else paused).append(c.run_id())
            todo.append(c)
        elif st == "complete" or (st is not None and not retry_failed):
            skip.append(c.run_id())
        else:
            todo.append(c)
    return todo, skip, damaged, paused


def steps_to_train(config: TrainConfig) -> int:
    """Training steps a sweep spends on `config`: a branch starts at its checkpoint's step."""
    return config.steps - (config.branch_point()[1] if config.branch else 0)


def steps_saved(store: RunStore, todo: list[TrainConfig]) -> int:
    """Training steps the resume states of `todo` already hold (where the steps bar starts)."""
    want = {c.run_id(): c for c in todo}
    return sum(steps_to_train(want[r["run_id"]]) - (r["steps"] - r["step"])
               for r in store.in_progress() if r["run_id"] in want and r["step"] is not None)


def _not_while_importing_main(executor) -> None:
    """A script that starts a sweep outside `if __name__ == "__main__":` starts it again in
    every worker (they import the script): stop there, before that copy claims any run."""
    import multiprocessing as mp
    if getattr(executor, "workers", 1) > 1 and getattr(mp.current_process(), "_inheriting", False):
        raise ConfigError("executor", f"{type(executor).__name__}(workers={executor.workers})",
                          'a sweep started under `if __name__ == "__main__":` in a script (its workers import the'
                          " script and would start the sweep again)")


def resumed_packs(store: RunStore, todo: list[TrainConfig], size: int | None, stored: set,
                  pack_files: dict) -> list[list[TrainConfig]]:
    """The packs killed midway whose members are all still to train (and still pack at `size`),
    in their own order, so each continues from its resume state. Every pack state is noted in
    `pack_files` under its members (dropped once one of them is stored); one that holds a run
    already stored is dropped now."""
    by_id = {c.run_id(): c for c in todo}
    out, taken = [], set()
    for path, ids, _ in store.pack_resumes():
        if ids is None:             # unreadable: it only costs the time it saved
            continue
        if stored & set(ids):
            path.unlink(missing_ok=True)
            continue
        for rid in ids:
            pack_files.setdefault(rid, set()).add(path)
        group = [by_id.get(rid) for rid in ids]
        if (None not in group and not taken & set(ids) and all(choose_stepper(c, size) == "pack" for c in group)
                and len(group) <= pack_size(size, group[0].device)):
            out.append(group)
            taken |= set(ids)
    return out


def run_sweep(configs: list[TrainConfig], store: RunStore, executor=None, retry_failed: bool = False,
              progress: bool = True, pack: int | None = None, pause: Pause | None = None) -> SweepResult:
    """Train every config not yet in `store`; the store is written here, one run at a time.
    Compatible configs train as packs of up to `pack` members in one process (None: the
    executor's pack, else the engine's default for their device; 1: each alone); each member
    is stored as its own run, under the id it has alone. A run trained alone that is killed
    midway continues from its last resume state (RunStore.resume_path) on the next sweep, alone
    even where that sweep packs, and so does a pack killed midway whose members are all still
    to train (RunStore.pack_resume_path).
    `pause` (runs trained alone only) pauses each run at a step or once its rows meet a rule, such as
    a stage reached: the run is stored as paused, beside its resume state, and listed in `paused`; a
    paused run this pause already settles is not trained again."""
    executor = executor or LocalExecutor()
    _not_while_importing_main(executor)
    store.ensure_writable()          # before any training: a store we cannot write loses the runs
    store.clean_stale()
    todo, skip, damaged, was_paused = pending(configs, store, retry_failed)
    if pause is not None:           # a paused run already where this pause leaves it is not trained again
        runs = {rid: store.load(rid) for rid in was_paused}
        done = {rid for rid, run in runs.items() if pause.settles(run.metrics, run.steps_done)}
        todo, skip = [c for c in todo if c.run_id() not in done], skip + sorted(done)
    replace = set(damaged) | set(was_paused)     # folders a new save goes over
    for c in todo:                   # a branch needs its source's checkpoint: refuse before any training
        if c.branch and c.branch_point()[1] not in store.checkpoint_steps(c.branch_point()[0]):
            store.checkpoint(*c.branch_point())      # raises, naming the checkpoints the source has
    size = pack if pack is not None else getattr(executor, "pack", None)
    if pause is not None and any(choose_stepper(c, size) == "pack" for c in todo):
        raise ConfigError("pause", pause, "runs trained alone (branches, or a sweep with pack 1)")
    res = SweepResult(len(configs), skipped=skip)
    claims: set = set()
    pack_files: dict = {}       # run id -> the pack resume states that hold it (dropped once it is stored)

    def hand_out():
        """Packs as they are handed out: each member claimed now, left out if another process
        has it or it finished elsewhere meanwhile; a branch goes alone, with its checkpoint."""
        size = pack if pack is not None else getattr(executor, "pack", None)
        again = resumed_packs(store, todo, size, set(skip), pack_files)
        taken = {c.run_id() for g in again for c in g}
        for group in again + packs([c for c in todo if c.run_id() not in taken], size, getattr(executor, "workers", 1)):
            items, ids, alone = [], [], []
            for c in group:
                rid = c.run_id()
                try:
                    mine = store.claim(rid)
                except OSError as e:        # a full disk: not even its claim fits; the others may still
                    res.unstored.append((rid, f"{e.strerror or e} writing its claim file"))
                    bar.update(1)
                    continue
                if not mine:
                    res.busy.append(rid)
                    bar.update(1)
                    continue
                if rid not in replace and store.status(rid) == "complete":
                    store.release(rid)
                    res.skipped.append(rid)
                    bar.update(1)
                    continue
                claims.add(rid)
                if choose_stepper(c, size) == "pack" and not store.resume_path(rid).exists():    # a pack member (packs do not branch)
                    items.append(c.resolved())
                    ids.append(rid)
                    continue
                try:            # alone: a branch, a run that does not pack, or one killed while it trained alone
                    start = branch_start(store, c)
                    alone.append((c.resolved(), start, str(store.resume_path(rid)), pause))
                except (ConfigError, CorruptRunError) as e:     # no source checkpoint: this run fails, others go on
                    store.save(failed_run(c.resolved(), str(e), ""), replace=rid in replace)
                    store.release(rid)
                    claims.discard(rid)
                    res.failed.append((rid, str(e)))
                    bar.update(1)
            if ids:
                path = store.pack_resume_path(ids)
                for rid in ids:
                    pack_files.setdefault(rid, set()).add(path)
                yield Pack(tuple(items), str(path))
            if alone:
                yield alone

    bar = tqdm(total=len(configs), initial=len(skip), desc="sweep", unit="run", disable=not progress)
    bar.set_postfix(done=0, failed=0, remaining=len(todo))
    steps = tqdm(total=sum(steps_to_train(c) for c in todo), initial=steps_saved(store, todo) if progress else 0,
                 desc="training steps", unit="step", disable=not progress, position=1, leave=False, mininterval=1.0)
    try:
        outs = (out for group in executor.imap(run_pack, hand_out(), on_steps=steps.update if progress else None)
                for out in group)
        for out in outs:
            if "lost" in out or "paused" in out:    # nothing stored, its resume state kept
                rid = TrainConfig.from_dict(out["config"]).run_id()
                store.release(rid)
                claims.discard(rid)
                if "lost" in out:
                    res.lost.append(rid)
                    if store.resume_path(rid).is_file() or any(p.is_file() for p in pack_files.get(rid, ())):
                        res.lost_resumable.append(rid)
                else:
                    store_paused(store, out.get("run"))
                    res.paused.append((rid, out["paused"]))
                bar.update(1)
                continue
            run = out.get("run") or failed_run(out["config"], out["error"], out.get("traceback", ""))
            rid = run.run_id
            if out.get("pack_error"):
                res.pack_fallbacks.append((rid, out["pack_error"]))
                warnings.warn(f"run {rid} trained alone: its pack failed ({out['pack_error']})")
            try:
                store_trained(store, run, replace=retry_failed or rid in replace)
            except OSError as e:        # a full disk: the runs that fit are stored; this one keeps its resume state
                store.release(rid)
                claims.discard(rid)
                res.unstored.append((rid, f"{e.strerror or e} writing the store"))
                bar.update(1)
                continue
            for path in pack_files.pop(rid, ()):
                path.unlink(missing_ok=True)
            store.release(rid)
            claims.discard(rid)
            if rid in damaged:
                res.repaired.append(rid)
            if run.summary["status"] == "complete":
                res.done.append(rid)
            else:
                res.failed.append((rid, run.summary.get("error")))
            bar.update(1)
            bar.set_postfix(done=len(res.done), failed=len(res.failed),
                            remaining=len(todo) - len(res.done) - len(res.failed) - len(res.busy))
    finally:
        for rid in claims:                  # interrupted: let another sweep take these runs
            store.release(rid)
        steps.close()
        bar.close()
    return res
