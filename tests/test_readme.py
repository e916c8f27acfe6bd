"""Every Python code block in README.md runs as written, in order, in one fresh folder."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(first line number, source) of every ```python fenced block."""
    blocks = []
    for m in re.finditer(r"^```python\n(.*?)^```", text, flags=re.S | re.M):
        blocks.append((text.count("\n", 0, m.start()) + 2, m.group(1)))
    return blocks


def test_readme_has_python_blocks():
    assert len(python_blocks(README.read_text())) >= 5


@pytest.mark.slow
def test_readme_python_blocks_run_in_order(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    namespace: dict = {"__name__": "__readme__"}
    for line, source in python_blocks(README.read_text()):
        code = compile("\n" * (line - 1) + source, str(README), "exec")  # tracebacks show README's lines
        exec(code, namespace)  # noqa: S102  (the README is ours)
    assert os.path.exists("users.blm") and os.path.isdir("store")
