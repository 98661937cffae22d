"""Every table cell of the top-level README is short enough to read: at most 300 characters (a longer account
belongs in the report the row links to). Cells are read by splitting each table row on its unescaped pipes."""
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
LIMIT = 300


def table_cells(text: str):
    """(line number, column, cell text) of every cell in every markdown table row (separator rows excluded)."""
    for n, line in enumerate(text.splitlines(), 1):
        if not line.startswith("|") or re.fullmatch(r"\|[\s\-:|]+\|?", line.strip()):
            continue
        cells = re.split(r"(?<!\\)\|", line.strip())[1:-1]
        for k, c in enumerate(cells):
            yield n, k, c.strip()


def test_the_cell_reader_splits_rows_as_markdown_does():
    got = list(table_cells("| a | b \\| c |\n|---|---|\n| " + "x" * 5 + " | y |\ntext | not a row"))
    assert got == [(1, 0, "a"), (1, 1, "b \\| c"), (3, 0, "xxxxx"), (3, 1, "y")]


@pytest.mark.parametrize("line", sorted({n for n, _, _ in table_cells(README.read_text())}))
def test_no_readme_table_cell_exceeds_300_characters(line):
    long = [(k, len(c)) for n, k, c in table_cells(README.read_text()) if n == line and len(c) > LIMIT]
    assert not long, f"README.md line {line}: cells (column, characters) over {LIMIT}: {long}"
