"""A property-testing kit for task generators: generic invariants any generator can be checked
against with hypothesis, and the small protocol a task declares so the kit can check it. It
needs numpy and hypothesis only (no torch): tasks are duck-typed (`generate()` returning an
object with `vocab_size`, `seq_len`, `splits` of `inputs` / `targets` / `extra`, and `info`).

A task (any object with `generate() -> TaskData`, built by a factory from keyword parameters)
may declare `kit_spec() -> KitSpec`: which splits must not share examples and by what identity
(an anchor pair, a chemistry, a command), an oracle that recomputes every target from the
inputs, the counts it promises, and which queries must not appear in their own support.
Undeclared parts are skipped and reported as such; the structural invariants (determinism,
seeds matter, token ids in the vocabulary, sequence lengths) need no declaration.

    from critwin.testing import assert_task
    def test_my_task():
        assert_task(MyTask)            # MyTask(seed=...) -> object with generate()
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from critwin.errors import ConfigError


@dataclass(frozen=True)
class KitSpec:
    """What a task declares for the kit (every field optional)."""

    disjoint: tuple = ()        # ((split_a, split_b, identity(split) -> per-example keys), ...)
    oracle: Callable | None = None          # oracle(data, split_name, split) -> targets
    counts: Callable | None = None          # counts(data) -> {split: number of examples}
    leaks: Callable | None = None           # leaks(data, split_name, split) -> bool per example (True = leaked)
    n_classes: Callable | None = None       # n_classes(data) -> targets must lie in [0, n)


@dataclass
class InvariantResult:
    name: str
    status: str                 # "passed", "failed", "skipped"
    message: str = ""
    counterexample: dict | None = None


@dataclass
class KitReport:
    task: str
    examples: int
    results: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return all(r.status != "failed" for r in self.results)

    def text(self) -> str:
        lines = [f"task {self.task}: {sum(r.status == 'passed' for r in self.results)} passed,"
                 f" {sum(r.status == 'failed' for r in self.results)} failed,"
                 f" {sum(r.status == 'skipped' for r in self.results)} skipped ({self.examples} examples each)"]
        for r in self.results:
            line = f"  {r.status:7s} {r.name}"
            if r.status == "failed":
                line += f": {r.message} (smallest counterexample: {r.counterexample})"
            elif r.message:
                line += f" ({r.message})"
            lines.append(line)
        return "\n".join(lines)


def seeds(max_seed: int = 2**16):
    """The hypothesis strategy of task seeds."""
    from hypothesis import strategies as st
    return st.integers(0, max_seed)


def _spec(task) -> KitSpec:
    return task.kit_spec() if hasattr(task, "kit_spec") else KitSpec()


def _arrays(data) -> dict:
    out = {}
    for name, s in data.splits.items():
        out[f"{name}.inputs"], out[f"{name}.targets"] = s.inputs, s.targets
        for k, v in s.extra.items():
            if isinstance(v, np.ndarray):
                out[f"{name}.{k}"] = v
    return out


def _same(a, b) -> str | None:
    """None if identical, else the first differing array."""
    x, y = _arrays(a), _arrays(b)
    if x.keys() != y.keys():
        return f"different arrays: {sorted(set(x) ^ set(y))}"
    for k in x:
        if x[k].shape != y[k].shape or not np.array_equal(x[k], y[k]):
            return k
    return None


def _keys(ident) -> set:
    return {tuple(np.atleast_1d(np.asarray(v)).tolist()) for v in ident}


# Each invariant: (factory, params) -> None, raising AssertionError with a message; or "skip: why".
def deterministic(factory, params):
    diff = _same(factory(**params).generate(), factory(**params).generate())
    assert diff is None, f"two generations from the same parameters differ in {diff}"


def seed_matters(factory, params):
    if "seed" not in params:
        return "skip: no seed parameter"
    other = factory(**{**params, "seed": params["seed"] + 1}).generate()
    assert _same(factory(**params).generate(), other) is not None, "seeds s and s + 1 give identical data"


def tokens_in_vocab(factory, params):
    task = factory(**params)
    data = task.generate()
    n_classes = _spec(task).n_classes
    n = n_classes(data) if n_classes else data.info.get("n_classes", data.vocab_size)
    for name, s in data.splits.items():
        assert s.inputs.dtype.kind in "iu" and s.targets.dtype.kind in "iu", f"{name}: non-integer tokens"
        lo, hi = int(s.inputs.min(initial=0)), int(s.inputs.max(initial=0))
        assert 0 <= lo and hi < data.vocab_size, f"{name}: token ids in [{lo}, {hi}], vocabulary {data.vocab_size}"
        assert s.targets.min(initial=0) >= 0 and s.targets.max(initial=0) < n, f"{name}: targets outside [0, {n})"


def sequence_lengths(factory, params):
    data = factory(**params).generate()
    for name, s in data.splits.items():
        assert s.inputs.ndim == 2 and s.inputs.shape[1] <= data.seq_len, \
            f"{name}: inputs {s.inputs.shape}, declared seq_len {data.seq_len}"
        assert len(s.targets) == len(s.inputs), f"{name}: {len(s.inputs)} inputs, {len(s.targets)} targets"
        if "lengths" in s.extra:
            ln = np.asarray(s.extra["lengths"])
            assert ln.min(initial=1) >= 1 and ln.max(initial=0) <= s.inputs.shape[1], f"{name}: lengths outside the rows"


def _declared(factory, params, field: str, why: str, given=None):
    """(the task's declared `field`, its data), or (None, 'skip: why') when it declares none."""
    task = factory(**params)
    fn = given or getattr(_spec(task), field)
    return (fn, task.generate()) if fn else (None, f"skip: {why}")


def splits_disjoint(factory, params):
    pairs, data = _declared(factory, params, "disjoint", "the task declares no split identity")
    for a, b, ident in pairs or ():
        shared = _keys(ident(data.splits[a])) & _keys(ident(data.splits[b]))
        assert not shared, f"{a} and {b} share {len(shared)} identities, e.g. {sorted(shared)[0]}"
    return None if pairs else data


def declared_counts(factory, params):
    counts, data = _declared(factory, params, "counts", "the task declares no counts")
    if counts is None:
        return data
    for name, n in counts(data).items():
        assert len(data.splits[name]) == n, f"{name}: {len(data.splits[name])} examples, declared {n}"


def targets_by_oracle(factory, params, oracle=None):
    oracle, data = _declared(factory, params, "oracle", "no oracle (declare one, or pass oracle=)", oracle)
    if oracle is None:
        return data
    for name, s in data.splits.items():
        bad = np.nonzero(np.asarray(oracle(data, name, s)) != s.targets)[0]
        assert not len(bad), f"{name}: {len(bad)} targets differ from the oracle, first at row {bad[0]}"


def no_leaks(factory, params):
    leaks, data = _declared(factory, params, "leaks", "the task declares no support to leak into")
    if leaks is None:
        return data
    for name, s in data.splits.items():
        hit = np.nonzero(np.asarray(leaks(data, name, s)))[0]
        assert not len(hit), f"{name}: {len(hit)} queries appear in their own support, first at row {hit[0]}"


INVARIANTS = {f.__name__: f for f in (deterministic, seed_matters, tokens_in_vocab, sequence_lengths,
                                      splits_disjoint, declared_counts, targets_by_oracle, no_leaks)}


def check_task(factory, params: dict | None = None, examples: int = 20, oracle=None, name: str | None = None,
               invariants=None) -> KitReport:
    """Every invariant as one hypothesis property over `params` (name -> strategy; default a
    seed); a failure is shrunk to its smallest parameters. Returns a readable report."""
    from hypothesis import HealthCheck, given, reject, settings
    from hypothesis import strategies as st
    params = {"seed": seeds()} if params is None else params
    report = KitReport(name or getattr(factory, "__name__", str(factory)), examples)
    for inv_name in invariants or INVARIANTS:
        inv = INVARIANTS[inv_name]
        seen = {"skip": None, "last": None}

        @settings(max_examples=examples, deadline=None, database=None, derandomize=True,
                  suppress_health_check=list(HealthCheck))
        @given(st.fixed_dictionaries(params))
        def prop(kw):
            try:
                factory(**kw)
            except (ConfigError, ValueError, TypeError):
                reject()                    # parameters the task refuses are not examples
            seen["last"] = kw
            out = inv(factory, kw, oracle) if inv is targets_by_oracle else inv(factory, kw)
            if isinstance(out, str):
                seen["skip"] = out[len("skip: "):]
        try:
            prop()
        except AssertionError as e:
            report.results.append(InvariantResult(inv_name, "failed", str(e).split("\n")[0], seen["last"]))
            continue
        status = "skipped" if seen["skip"] else "passed"
        report.results.append(InvariantResult(inv_name, status, seen["skip"] or ""))
    return report


def assert_task(factory, params: dict | None = None, examples: int = 20, oracle=None) -> KitReport:
    """check_task, raising AssertionError with the report when an invariant fails (for tests)."""
    report = check_task(factory, params, examples, oracle)
    if not report.ok:
        raise AssertionError(report.text())
    return report


def split_rows(split) -> list:
    """Identity by the whole input row (for splits with no coarser identity)."""
    return [tuple(r) for r in split.inputs.tolist()]


def task_kit():
    """pytest fixture: `from critwin.testing import task_kit` in a conftest.py, then a test takes
    `task_kit` and calls task_kit(MyTask) (that is assert_task)."""
    return assert_task


try:        # a fixture only when pytest is there; the kit itself does not need it
    import pytest as _pytest
    task_kit = _pytest.fixture(name="task_kit")(task_kit)
except ImportError:  # pragma: no cover
    pass
