"""The training driver: one loop, read top to bottom, that drives a stepper.

The driver owns what every training shares: each member's batch order, the learning-rate and
decay schedules, the evaluation rhythm, divergence, checkpoints, the resume state's rhythm and
the progress bar. A stepper (a `stepper.Stepper`) owns only its representation, as scipy's OdeSolver
subclasses own only `_step_impl`: `forward` (the batch's losses), `update` (backward, freezes, optimizer step,
decay), `evaluate` (log every live member), `state`/`restore` (what a killed run continues
from). `steppers.model.ModelStepper` steps one nn.Module with a torch optimizer; `steppers.pack.PackStepper`
steps a pack of members stacked along a leading axis. One member for a run, E for a pack.
`train_members` runs the loop and ends each member in its Run: every task (anchor, Alchemy, controls)
trains through it, from `train.train` (one model) or `train.train_pack` (a pack).
"""
from __future__ import annotations

import os
import signal
import threading
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import torch
from critwin.empirical.config import TrainConfig
from critwin.empirical.store import Run, write_atomic
from critwin.empirical.training_parts import finish_run
from tqdm.auto import tqdm

from critwin.errors import ConfigError

RESUME_SECONDS = 300.0   # default of how often (at most) a run writes the state it resumes from after a kill
POSTFIX = ("_acc", "test_event_a", "test_p_b_given_a")   # what a single run's progress bar shows


class BatchOrder:
    """One member's batch order: a seeded permutation of its n training examples, drawn anew
    from its own generator when the next batch would run past the end."""

    def __init__(self, n: int, batch_size: int, seed: int):
        self.n, self.batch_size = n, batch_size
        self.gen = torch.Generator().manual_seed(seed)
        self.perm, self.ptr = torch.randperm(n, generator=self.gen), 0

    def next(self) -> torch.Tensor:
        """The indices of the next batch."""
        if self.ptr + self.batch_size > self.n:
            self.perm, self.ptr = torch.randperm(self.n, generator=self.gen), 0
        idx = self.perm[self.ptr:self.ptr + self.batch_size]
        self.ptr += self.batch_size
        return idx

    def restore(self, generator, perm, ptr: int) -> None:
        self.gen.set_state(generator)
        self.perm, self.ptr = perm.to(torch.int64), ptr


def eval_splits(cfg: TrainConfig, data) -> dict:
    """The splits every evaluation scores: each cut to cfg.eval_max examples (fixed subset)."""
    return {name: split.sample(cfg.eval_max) for name, split in data.splits.items()}


@dataclass
class Member:
    """One run's own part of a training, whatever holds its weights: config, data, batch order,
    decay schedule, evaluation splits, logged rows, last evaluation and status."""
    cfg: TrainConfig
    data: object
    order: BatchOrder
    lam: np.ndarray                 # the decay lambda of every step
    scored: dict                    # split name -> the split every evaluation scores
    rows: list = field(default_factory=list)
    last: dict = field(default_factory=dict)
    status: str = "complete"
    error: str | None = None
    alive: bool = True              # False once its training loss is not finite (it is logged no more)

    @classmethod
    def of(cls, cfg: TrainConfig, data) -> Member:
        split = data.splits["train"]
        if cfg.batch_size > len(split):
            raise ConfigError("batch_size", cfg.batch_size, f"at most the {len(split)} training examples")
        return cls(cfg, data, BatchOrder(len(split), cfg.batch_size, cfg.seed),
                   cfg.schedule().value(np.arange(cfg.steps)), eval_splits(cfg, data))


@dataclass
class Outcome:
    """What the driver hands back beside the members: the step it started at, whether from a
    resume state, the training seconds (those before a kill included) and the checkpoints."""
    first: int
    resumed: bool
    wall: float
    checkpoints: dict


def drive(stepper, members: list[Member], start: dict | None = None, resume: Path | None = None,
          save_every: float | None = None, progress: bool = True, on_steps=None, until: int | None = None,
          stop_when=None) -> Outcome:
    """Train `members` with `stepper` from step 0, from `start` (a branch's checkpoint), or from
    the resume state at `resume` when one of these very configs is there; write that state at
    the first evaluation `save_every` seconds after the last write. on_steps(n) hears, at every
    evaluation, the member-steps done since the last. SIGINT or SIGTERM ends it after the step in
    progress, with that state written (`Stopped`), so a stop costs no training. `until` (a step
    before the end) pauses there the same way (`Paused`): the run keeps its own schedule and steps.
    `stop_when(rows)` (a member's logged rows -> bool, e.g. a stage reached) pauses the same way at the
    first evaluation where it holds for every live member (at once, training nothing, if it holds already)."""
    cfg0 = members[0].cfg
    steps = cfg0.steps
    if until is not None and (isinstance(until, bool) or not isinstance(until, int) or until < 1):
        raise ConfigError("stop_at", until, "a step >= 1 to pause at (the run's resume state is kept)")
    if until is not None and until < steps and resume is None:
        raise ConfigError("stop_at", until, "a pause needs a resume state to keep (train into a store)")
    if stop_when is not None and (resume is None or not callable(stop_when)):
        raise ConfigError("stop_when", stop_when, "a callable on a run's logged rows, with a resume state to keep")
    saved = read_resume_state(resume, stepper.identity)
    begin = saved or start
    if begin is not None:
        stepper.restore(begin, resumed=saved is not None)
        first = begin["step"]
    else:
        first = 0
        stepper.evaluate(0)
    reached = lambda: stop_when is not None and all(stop_when(m.rows) for m in members if m.alive)  # noqa: E731
    checkpoints = dict((saved or {}).get("checkpoints", {}))
    if first < steps and ((until is not None and first >= until) or reached()):
        if saved is None:       # a branch or fresh start (a pause needs a resume path): keep where it stands
            ResumeWriter(resume, save_every).write(stepper.state(first, 0.0, checkpoints))
        raise Paused(first, steps, (saved or {}).get("wall", 0.0))   # a resume state there is left as it was
    t0, wall_before, done = time.perf_counter(), (saved or {}).get("wall", 0.0), first
    saver = ResumeWriter(resume, save_every)
    bar = tqdm(total=steps, initial=first, desc=stepper.label, unit="step", disable=not progress, leave=False,
               mininterval=0.5)
    with StopOnSignal() as stop:
        for step in range(first, steps):
            finite = stepper.forward([m.order.next() for m in members])
            for m, ok in zip(members, finite):
                if m.alive and not ok:
                    m.alive, m.status, m.error = False, "diverged", f"non-finite training loss at step {step}"
            if not any(m.alive for m in members):
                break
            evaluate = (step + 1) % cfg0.eval_every == 0 or step + 1 == steps
            stepper.update(step, [m.cfg.lr_at(step) for m in members], [float(m.lam[step]) for m in members], evaluate)
            if evaluate:
                stepper.evaluate(step + 1)
                if on_steps is not None:
                    on_steps((step + 1 - done) * sum(m.alive for m in members))
                    done = step + 1
                if len(members) == 1:
                    last = members[0].last
                    bar.set_postfix({k: f"{last[k]:.3f}" for k in last if k.endswith(POSTFIX)
                                     and not k.startswith("test_ablate")}, refresh=False)
            if step + 1 in cfg0.checkpoints:            # a pack holds none (engine.pack_key)
                checkpoints[step + 1] = stepper.state(step + 1)
            pausing = (until is not None and step + 1 >= until) or (evaluate and reached())
            stopping = (stop.signum is not None or pausing) and step + 1 < steps    # the last step is stored
            if (evaluate and saver.due(step + 1, steps)) or (stopping and saver.path is not None):
                saver.write(stepper.state(step + 1, wall_before + time.perf_counter() - t0, checkpoints))
            bar.update(1)
            if stopping:
                bar.close()
                raise Stopped(stop.signum) if stop.signum is not None else \
                    Paused(step + 1, steps, wall_before + time.perf_counter() - t0)
    bar.close()
    return Outcome(first, saved is not None, wall_before + time.perf_counter() - t0, checkpoints)


def train_members(stepper, members: list[Member], n_parameters: int, start: dict | None = None,
                  resume: Path | None = None, save_every: float | None = None, progress: bool = True,
                  on_steps=None, until: int | None = None, stop_when=None, packed: bool = False) -> list[Run]:
    """Train `members` with `stepper` through `loop.drive`; one Run each, its wall time the loop's shared
    among the members (`packed`: the summary says so). A pause (`until`, `stop_when`) raises `loop.Paused`
    carrying each member's Run so far with status 'paused' (`runs`; `run`: the first's, the one model's)."""
    def extra(wall: float, more: dict) -> dict:
        return {**({"pack": {"members": len(members), "wall_seconds": wall}} if packed else {}), **more}
    try:
        out = drive(stepper, members, start, resume, save_every, progress, on_steps, until, stop_when)
    except Paused as p:     # what was trained so far, as runs of their own status (a store keeps them)
        p.runs = [finish_run(m.cfg, m.data, m.rows, m.last, "paused", None, p.wall / len(members), n_parameters,
                             extra=extra(p.wall, {"steps_done": p.step})) for m in members]
        p.run = p.runs[0]
        raise
    resumed = {"resumed_from_step": out.first} if out.resumed else {}
    return [finish_run(m.cfg, m.data, m.rows, m.last, m.status, m.error, out.wall / len(members), n_parameters,
                       out.checkpoints, extra(out.wall, resumed)) for m in members]


class Stopped(KeyboardInterrupt):
    """Training stopped by SIGINT or SIGTERM after its resume state was written; `signum` says which
    (a KeyboardInterrupt, so whatever handles Ctrl-C handles it)."""

    def __init__(self, signum: int):
        super().__init__(f"stopped by signal {signum}")
        self.signum = signum


class Paused(Stopped):
    """Training paused at the step asked for (`drive(until=...)`, or its stop_when), its resume state
    written: the same config trained again without a pause continues it, as if it had never stopped.
    `wall`: its training seconds so far; `run` (set by `train`): the Run so far, status 'paused'."""

    def __init__(self, step: int, steps: int, wall: float = 0.0):
        KeyboardInterrupt.__init__(self, f"paused at step {step} of {steps}")
        self.signum, self.step, self.steps, self.wall, self.run = None, step, steps, wall, None


class StopOnSignal:
    """Ctrl-C (SIGINT) or SIGTERM while a loop runs: the loop finishes its step, writes the resume
    state and raises `Stopped`, so a stop loses no training; a second signal stops at once.
    Installed only in the main thread and only over a signal's default handler (a pool worker
    that ignores SIGINT goes on ignoring it); the handlers before are put back on exit. `at_once`:
    the first signal raises `Stopped` (a process that only waits, such as a worker pool's parent)."""

    def __init__(self, at_once: bool = False):
        self.signum, self.old, self.at_once = None, {}, at_once

    def _handle(self, signum, frame):
        if self.at_once or self.signum is not None:
            raise Stopped(signum)
        self.signum = signum

    def __enter__(self):
        if threading.current_thread() is threading.main_thread():
            for sig, default in ((signal.SIGINT, signal.default_int_handler), (signal.SIGTERM, signal.SIG_DFL)):
                if signal.getsignal(sig) is default:
                    self.old[sig] = signal.signal(sig, self._handle)
        return self

    def __exit__(self, *exc):
        for sig, handler in self.old.items():
            signal.signal(sig, handler)
        return False


class ResumeWriter:
    """When and where a run (or pack) writes its resume state: to `path` (None: never), at most
    every `save_every` seconds (None: $CRITWIN_RESUME_SECONDS, else RESUME_SECONDS), never after
    the last step, atomically."""

    def __init__(self, path, save_every: float | None = None):
        self.path = None if path is None else Path(path)
        self.every = float(os.environ.get("CRITWIN_RESUME_SECONDS", RESUME_SECONDS)) if save_every is None \
            else save_every
        self.last = time.perf_counter()

    def due(self, done: int, steps: int) -> bool:
        return self.path is not None and done < steps and time.perf_counter() - self.last >= self.every

    def write(self, blob: bytes) -> None:
        """A write that fails (a full disk) costs only resumability: warn and train on."""
        try:
            write_atomic(self.path, blob)
        except OSError as e:
            warnings.warn(f"could not write the resume state {self.path} ({e.strerror or e}); training on without it")
        self.last = time.perf_counter()


def read_resume_state(path, cfg: TrainConfig | list[TrainConfig]) -> dict | None:
    """The training state a killed run left at `path`, if it is readable and of this very config
    (a list: of this very pack, members in order); None otherwise (an unreadable or foreign file
    is ignored, with a warning, and overwritten later)."""
    if path is None or not Path(path).is_file():
        return None
    pack = isinstance(cfg, list)
    key, want, steps = ("configs", [c.run_id() for c in cfg], cfg[0].steps) if pack else \
        ("config", cfg.run_id(), cfg.steps)
    try:
        state = torch.load(path, map_location="cpu", weights_only=False)
        saved = [TrainConfig.from_dict(c).run_id() for c in state[key]] if pack else \
            TrainConfig.from_dict(state[key]).run_id()     # by identity: fields added later at their defaults agree
        ok = state.get("format") == 1 and saved == want and 0 < state["step"] < steps
    except Exception as e:  # noqa: BLE001 - a damaged resume file only costs the time it saved
        warnings.warn(f"ignoring unreadable resume state {path} ({type(e).__name__}: {e}); training from the start")
        return None
    if not ok:
        warnings.warn(f"ignoring resume state {path}: it belongs to another config; training from the start")
        return None
    return state
