"""Every Python code block in README.md runs as written, in order, in one fresh folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


def fenced_blocks(text: str) -> list[tuple[str, int, str]]:
    """(language, first line number, source) of every fenced block, in order."""
    blocks, lang, start, body = [], None, 0, []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.startswith("```"):
            if lang is None:
                lang, start, body = line[3:].strip(), number + 1, []
            else:
                blocks.append((lang, start, "\n".join(body) + "\n"))
                lang = None
        elif lang is not None:
            body.append(line)
    assert lang is None, "README has an unclosed code fence"
    return blocks


def python_blocks(text: str) -> list[tuple[int, str]]:
    """(first line number, source) of every ```python block."""
    return [(start, src) for lang, start, src in fenced_blocks(text) if lang == "python"]


def shell_commands(text: str) -> list[str]:
    """Every command line of the README's plain fenced blocks (continuations joined, comments cut)."""
    out = []
    for lang, _, src in fenced_blocks(text):
        if lang:
            continue
        for line in src.replace("\\\n", " ").splitlines():
            line = line.split("#", 1)[0].strip()
            if line:
                out.append(" ".join(line.split()))
    return out


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


def test_every_readme_command_is_one_we_run():
    """Nothing in the shell blocks is skipped silently: make targets run in CI themselves."""
    cmds = shell_commands(README.read_text())
    assert {"make demo", "make test"} <= set(cmds)
    others = [c for c in cmds if not c.startswith("make ")]
    assert others and all(c.startswith("bloomdb ") for c in others), others


@pytest.mark.slow
@pytest.mark.parametrize("command", [c for c in shell_commands(README.read_text()) if c.startswith("bloomdb ")])
def test_readme_command_runs_as_written(command, tmp_path, monkeypatch):
    import shlex

    from bloomdb.cli.main import main

    monkeypatch.chdir(tmp_path)
    assert main(shlex.split(command)[1:]) == 0
