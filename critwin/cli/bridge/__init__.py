"""Commands `critwin bridge ...`: theory against the runs in a store, one module per subcommand."""
from __future__ import annotations

from critwin.cli.bridge import (
    arrival,
    compare,
    fit,
    intervene,
    left_edge,
    mechanism,
    score,
    stage_skill,
    stages,
    survival,
    timescales,
)

SUBCOMMANDS = (survival, score, compare, fit, mechanism, arrival, left_edge, intervene, timescales, stage_skill, stages)


def register(sub):
    for module in SUBCOMMANDS:
        module.register(sub)
