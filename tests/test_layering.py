"""theory/ never imports torch or empirical; empirical never imports theory; the shared
core (critwin/: errors, schedules) imports neither."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


def imported_modules(folder: str):
    for path in (ROOT / folder).rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for a in node.names:
                    yield path, a.name
            elif isinstance(node, ast.ImportFrom):
                mod = node.module or ""
                yield path, ("." * node.level) + mod


@pytest.mark.parametrize("folder,banned", [
    ("theory", ("torch", "critwin.empirical", "..empirical", "critwin.bridge", "..bridge")),
    ("empirical", ("critwin.theory", "..theory", "critwin.bridge", "..bridge")),
    ("critwin", ("torch", "critwin.theory", ".theory", "critwin.empirical", ".empirical",
                 "critwin.bridge", ".bridge")),
])
def test_import_direction(folder, banned):
    bad = [(str(p.relative_to(ROOT)), m) for p, m in imported_modules(folder)
           if any(m == b or m.startswith(b + ".") for b in banned)]
    assert bad == []
