"""Handlers of `critwin tasks ...`: run the task-generator testing kit on a task."""
from __future__ import annotations

import importlib

from critwin.errors import ConfigError


def task_factory(name: str, options: dict):
    """A registered task name (built by make_task with `options`) or a user's `module:callable`."""
    if ":" in name:
        mod, _, attr = name.partition(":")
        try:
            return getattr(importlib.import_module(mod), attr)
        except (ImportError, AttributeError) as e:
            raise ConfigError("task", name, f"a registered task or an importable module:callable ({e})") from None
    from critwin.empirical.tasks import TASKS, make_task
    if name not in TASKS:
        raise ConfigError("task", name, "one of " + ", ".join(TASKS) + ", or module:callable")
    make_task(name, 0, **options)           # refuses options the task does not take, naming them

    def factory(seed):
        return make_task(name, seed, **options)
    factory.__name__ = name
    return factory


def parse_options(sets) -> dict:
    out = {}
    for kv in sets or []:
        k, sep, v = kv.partition("=")
        if not sep:
            raise ConfigError("set", kv, "KEY=VALUE, e.g. chemistries=8")
        try:
            out[k] = int(v)
        except ValueError:
            try:
                out[k] = float(v)
            except ValueError:
                out[k] = {"true": True, "false": False}.get(v.lower(), v)
    return out


def cmd_check(args):
    from critwin.testing import check_task, seeds
    if args.examples < 1:
        raise ConfigError("examples", args.examples, "a number of hypothesis examples >= 1")
    factory = task_factory(args.name, parse_options(args.set))
    report = check_task(factory, {"seed": seeds(args.max_seed)}, args.examples, name=args.name)
    payload = {"task": args.name, "ok": report.ok,
               "results": [{"name": r.name, "status": r.status, "message": r.message,
                            "counterexample": r.counterexample} for r in report.results]}
    return payload, report.text(), 0 if report.ok else 1


def register(sub):
    p = sub.add_parser("check", help="property-test a task generator: determinism, seeds, disjoint splits, counts,"
                                     " targets by its oracle, vocabulary, lengths, leaks",
                       description="Run the testing kit (critwin.testing) on a registered task, or on a user's"
                                   " generator given as module:callable (called with seed=...). Exit 1 when an"
                                   " invariant fails; the smallest failing seed is shown.")
    p.add_argument("name", help="a registered task (anchor_permutation, modarith, alchemy_withheld, ...) or"
                                " module:callable")
    p.add_argument("--examples", type=int, default=20, help="hypothesis examples per invariant")
    p.add_argument("--max-seed", type=int, default=2**16)
    p.add_argument("--set", action="append", metavar="KEY=V",
                   help="task option, e.g. chemistries=8 hops=2 (each example generates the task anew: cap the"
                        " Alchemy chemistries to keep it fast)")
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=cmd_check)
