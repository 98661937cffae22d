"""The README leads: it stays short, its links resolve, and its Python example runs."""
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text()


def test_the_readme_is_short_and_its_links_resolve():
    assert len(README.encode()) < 12 * 1024
    for doc in [ROOT / "README.md", *(ROOT / "docs").glob("*.md"), ROOT / "paper_checks" / "README.md"]:
        for target in re.findall(r"\]\(([^)#]+)\)", doc.read_text()):
            if not target.startswith("http"):
                assert (doc.parent / target).exists(), (doc.name, target)


def test_the_readme_python_example_runs(tmp_path, monkeypatch):
    """The example as printed, with its run shortened 10x (same config otherwise) and its store in tmp."""
    code = re.search(r"```python\n(.*?)```", README, re.S).group(1)
    short = code.replace('"steps": 3000', '"steps": 300').replace('"wd_window_start": 400, "wd_width": 1000',
                                                                  '"wd_window_start": 40, "wd_width": 100')
    assert short != code
    monkeypatch.chdir(tmp_path)
    exec(compile(short.replace("train(cfg)", "train(cfg, progress=False)"), "README.md", "exec"), {})
    assert len(list((tmp_path / "runs" / "example").iterdir())) == 1
