"""The layers, bottom to top: the shared core (critwin/: errors, schedules, testing) <- theory/ and
empirical/ (never each other; theory never torch) <- bridge/ (analysis joining them) <- paper_checks/
(the claims) <- critwin/cli/ (commands only). No module imports one above it, so no import runs in a
circle, inside a package or between packages; analysis modules hold no argparse."""
import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
FOLDERS = {"critwin": "critwin", "theory": "critwin.theory", "empirical": "critwin.empirical",
           "bridge": "critwin.bridge", "paper_checks": "critwin.paper_checks"}
LAYER = {"core": 0, "theory": 1, "empirical": 1, "bridge": 2, "paper_checks": 3, "cli": 4}


def modules() -> dict:
    """module name -> file, for every module of the installed packages (reports are scripts, not modules)."""
    out = {}
    for folder, pkg in FOLDERS.items():
        for path in (ROOT / folder).rglob("*.py"):
            if "reports" in path.parts:
                continue
            parts = list(path.relative_to(ROOT / folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            out[".".join([pkg, *parts])] = path
    return out


def imports_of(path: Path, name: str, known: dict) -> set:
    """The project modules a file imports (top level or inside functions), relative imports resolved."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
            mod = node.module or ""
            if node.level:
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([mod] if mod else []))
            targets = [mod] + [f"{mod}.{a.name}" for a in node.names]
        else:
            continue
        for t in targets:
            while t and t not in known:
                t = t.rpartition(".")[0]
            if t and t != name:
                out.add(t)
    return out


def layer(mod: str) -> str:
    parts = mod.split(".")
    if parts[1:2] == ["cli"]:
        return "cli"
    return parts[1] if len(parts) > 1 and parts[1] in LAYER else "core"


def graph() -> dict:
    known = modules()
    return {m: imports_of(p, m, known) for m, p in known.items()}


def test_no_module_imports_a_layer_above_it():
    bad = sorted((m, t) for m, ts in graph().items() for t in ts if LAYER[layer(t)] > LAYER[layer(m)])
    assert bad == []


def test_theory_and_empirical_stay_apart_and_theory_never_imports_torch():
    g = graph()
    bad = sorted((m, t) for m, ts in g.items() for t in ts
                 if {layer(m), layer(t)} == {"theory", "empirical"})
    torch = [str(p.relative_to(ROOT)) for m, p in modules().items() if layer(m) in ("theory", "core")
             and any(isinstance(n, (ast.Import, ast.ImportFrom)) and "torch" in
                     ([a.name.split(".")[0] for a in n.names] if isinstance(n, ast.Import) else [(n.module or "").split(".")[0]])
                     for n in ast.walk(ast.parse(p.read_text())))]
    assert bad == [] and torch == []


def _cycles(g: dict) -> list:
    """Strongly connected components with more than one module (Tarjan), i.e. import circles."""
    index, low, stack, on, out, i = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = i[0]
        i[0] += 1
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in list(g):
        if v not in index:
            visit(v)
    return out


def test_cycle_finder_finds_a_planted_circle():
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _cycles({"a": {"b"}, "b": set()}) == []


def test_no_import_cycles_between_modules_or_packages():
    g = {m: {t for t in ts if not t.endswith("__init__")} for m, ts in graph().items()}
    # package-level circles: contract each module to its layer's package
    pkg = {}
    for m, ts in g.items():
        pkg.setdefault(layer(m), set()).update(layer(t) for t in ts if layer(t) != layer(m))
    assert _cycles(g) == [] and _cycles(pkg) == []


@pytest.mark.parametrize("folder", ["theory", "empirical", "bridge", "paper_checks"])
def test_analysis_modules_hold_no_argparse(folder):
    """A module may parse arguments only as a script run on its own (python3 path/to/it.py)."""
    bad = [str(p.relative_to(ROOT)) for p in (ROOT / folder).glob("*.py")
           if ("argparse" in p.read_text() or "add_argument(" in p.read_text())
           and 'if __name__ == "__main__"' not in p.read_text()]
    assert bad == []
