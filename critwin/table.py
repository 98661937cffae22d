"""Plain-text tables for the command line, and the columns that tell a table's conditions apart."""
from __future__ import annotations

import math


def _fmt(v) -> str:
    if isinstance(v, bool) or v is None:
        return str(v)
    if isinstance(v, float):
        if math.isnan(v) or math.isinf(v):
            return str(v)
        if v != 0 and (abs(v) >= 1e7 or abs(v) < 1e-3):
            return f"{v:.3e}"
        return f"{v:,.0f}" if abs(v) >= 1000 else f"{v:.4g}"
    return str(v)


def format_table(rows: list[dict], columns: list[str] | None = None) -> str:
    """Aligned columns; `columns` picks and orders keys (default: keys of the first row)."""
    if not rows:
        return "(no rows)"
    columns = columns or list(rows[0])
    cells = [[_fmt(r.get(c, "")) for c in columns] for r in rows]
    width = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    line = "  ".join(c.ljust(w) for c, w in zip(columns, width))
    sep = "  ".join("-" * w for w in width)
    numeric = [all(isinstance(r.get(c), (int, float)) for r in rows) for c in columns]
    body = ["  ".join(x.rjust(w) if num else x.ljust(w) for x, w, num in zip(row, width, numeric))
            for row in cells]
    return "\n".join([line, sep, *body])


NOT_CONDITION = {"run_id", "step", "split", "metric", "value", "seed", "task_seed"}


def condition_columns(runs) -> list[str]:
    """The config columns that tell conditions apart: task, hops and every other field that
    varies across the runs, except the seeds (seeds are what a condition summarises over)."""
    cols = [c for c in runs.columns if c not in NOT_CONDITION]
    vary = [c for c in cols if runs[c].map(repr).nunique() > 1]
    return [c for c in ("task", "hops") if c in cols] + [c for c in vary if c not in ("task", "hops")]
