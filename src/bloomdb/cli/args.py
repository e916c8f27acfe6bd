"""Argument types shared by the commands: bad values are refused by argparse itself.

Each function here is an argparse ``type=``: it returns the parsed value or raises
``argparse.ArgumentTypeError`` with a one-line reason, which argparse prints as
``bloomdb CMD: error: argument --X: <reason>`` and exits with status 2 (no traceback).
Nothing here imports the engines, so ``bloomdb --help`` stays instant.
"""

from __future__ import annotations

import argparse
import os
from typing import Callable


def _number(text: str, kind: Callable[[str], int | float], what: str) -> int | float:
    try:
        return kind(text.replace("_", "")) if kind is int else kind(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None


def positive_int(text: str) -> int:
    """An integer >= 1 (``1_000_000`` accepted)."""
    v = _number(text, int, "an integer")
    if v < 1:
        raise argparse.ArgumentTypeError(f"must be a positive integer, got {text}")
    return int(v)


def non_negative_int(text: str) -> int:
    """An integer >= 0."""
    v = _number(text, int, "an integer")
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {text}")
    return int(v)


def positive_float(text: str) -> float:
    """A finite number > 0."""
    v = _number(text, float, "a number")
    if not (v > 0 and v != float("inf")):
        raise argparse.ArgumentTypeError(f"must be a positive number, got {text}")
    return float(v)


def probability(text: str) -> float:
    """A false-positive rate or fraction strictly between 0 and 1."""
    v = _number(text, float, "a number")
    if not 0 < v < 1:
        raise argparse.ArgumentTypeError(f"must be between 0 and 1 (exclusive), got {text}")
    return float(v)


def fraction(text: str) -> float:
    """A match fraction in (0, 1]."""
    v = _number(text, float, "a number")
    if not 0 < v <= 1:
        raise argparse.ArgumentTypeError(f"must be in (0, 1], got {text}")
    return float(v)


def comma_list(item: Callable[[str], object]) -> Callable[[str], list]:
    """A comma-separated list whose every item passes ``item`` (empty items skipped; at least one)."""

    def parse(text: str) -> list:
        parts = [p.strip() for p in text.split(",") if p.strip()]
        if not parts:
            raise argparse.ArgumentTypeError("needs at least one value")
        return [item(p) for p in parts]

    return parse


def choices_list(known: tuple[str, ...], allow_empty: bool = False) -> Callable[[str], list[str]]:
    """A comma-separated list of names from ``known``."""

    def parse(text: str) -> list[str]:
        parts = [p.strip() for p in text.split(",") if p.strip()]
        bad = [p for p in parts if p not in known]
        if bad:
            raise argparse.ArgumentTypeError(f"unknown {', '.join(map(repr, bad))}; known: {', '.join(known)}")
        if not parts and not allow_empty:
            raise argparse.ArgumentTypeError(f"needs at least one of: {', '.join(known)}")
        return parts

    return parse


def _parent_is_writable(path: str) -> None:
    parent = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(parent):
        raise argparse.ArgumentTypeError(f"cannot write {path!r}: folder {parent!r} does not exist")
    if not os.access(parent, os.W_OK):
        raise argparse.ArgumentTypeError(f"cannot write {path!r}: folder {parent!r} is not writable")
    if os.path.isdir(path):
        raise argparse.ArgumentTypeError(f"cannot write {path!r}: it is a folder")


def output_file(text: str) -> str:
    """A file path whose folder exists and is writable."""
    _parent_is_writable(text)
    return text


PLOT_FORMATS = ("png", "svg", "pdf", "jpg", "jpeg", "eps", "ps", "tif", "tiff", "webp")


def plot_file(text: str) -> str:
    """A writable file path whose extension is an image format matplotlib writes."""
    ext = os.path.splitext(text)[1].lower().lstrip(".")
    if ext not in PLOT_FORMATS:
        raise argparse.ArgumentTypeError(f"{text!r}: the plot's format comes from its extension; use one of "
                                         f"{', '.join('.' + f for f in PLOT_FORMATS)}")
    return output_file(text)


def existing_folder(text: str) -> str:
    """A folder that exists and is writable (temporary work goes inside it)."""
    if not os.path.isdir(text):
        raise argparse.ArgumentTypeError(f"{text!r} is not an existing folder")
    if not os.access(text, os.W_OK):
        raise argparse.ArgumentTypeError(f"folder {text!r} is not writable")
    return text
