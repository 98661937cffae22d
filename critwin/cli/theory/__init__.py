"""Commands `critwin theory ...`: the stylised model without training, one module per subcommand (shared options in
`args`); each handler returns (JSON payload, human text)."""
from __future__ import annotations

from critwin.cli.theory import basin, budget, compare, derive, laws, predict, regimes, schedule, stages, timescale

SUBCOMMANDS = (timescale, regimes, derive, predict, schedule, basin, laws, compare, budget, stages)


def register(sub):
    for module in SUBCOMMANDS:
        module.register(sub)
