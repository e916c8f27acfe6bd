"""Printing a benchmark's runs: the table, a footer line, and optionally the runs as JSON."""

from __future__ import annotations

import json


def print_runs(table: str, footer: str, runs: list, json_path: str | None) -> None:
    """Print ``table`` and ``footer`` after a blank line; write ``[r.as_dict() for r in runs]`` to
    ``json_path`` when given (floats for numpy scalars)."""
    print()
    print(table)
    print(footer)
    if json_path:
        with open(json_path, "w") as fh:
            json.dump([r.as_dict() for r in runs], fh, indent=1, default=float)
