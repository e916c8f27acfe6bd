"""numba's on-disk cache for bloomdb's kernels, made safe across edits and upgrades.

numba stamps a cached kernel with the SHA-256 of the file that defines it. A kernel that calls a
helper from another module (``_intrinsics``, another ``_kernels`` file) is compiled together with
that helper, so after the helper's file changes the caller's cache entry is stale but its stamp
still matches: the old machine code would run. Here every bloomdb file's stamp is the SHA-256 of
the file *and of every bloomdb module it imports, transitively* (found by reading its ``import``
statements), so any change a kernel could have compiled in invalidates it. Files outside bloomdb
keep numba's own locators.

:func:`install` puts bloomdb's locators (the same places numba would use: ``NUMBA_CACHE_DIR`` if
set, else ``__pycache__`` beside the module, else the user-wide cache folder) ahead of numba's.
It must run before any kernel module is imported: ``bloomdb/__init__`` calls it first. Cost: one
read and parse of each bloomdb module a kernel file imports, once per process (a few ms).
"""

from __future__ import annotations

import ast
import hashlib
import os
from functools import lru_cache

from numba.core import caching

PACKAGE_DIR = os.path.dirname(os.path.abspath(__file__))


def _module_file(parts: list[str]) -> str | None:
    """The file of the bloomdb module ``parts`` (relative to the package folder), if it exists."""
    base = os.path.join(PACKAGE_DIR, *parts)
    for path in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(path):
            return path
    return None


@lru_cache(maxsize=None)
def imported_files(path: str) -> tuple[str, ...]:
    """The bloomdb files ``path`` imports directly (relative and ``bloomdb.``-absolute imports)."""
    here = os.path.relpath(os.path.dirname(path), PACKAGE_DIR).split(os.sep)
    here = [] if here == ["."] else here
    with open(path, "rb") as fh:
        tree = ast.parse(fh.read(), path)
    found: set[str] = set()
    for node in ast.walk(tree):
        targets: list[list[str]] = []
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = here[: len(here) - (node.level - 1)] if node.level > 1 else list(here)
            elif node.module and node.module.split(".")[0] == "bloomdb":
                base = []
            else:
                continue
            mod = base + (node.module.split(".") if node.module else [])
            if node.level == 0:
                mod = mod[1:]
            targets.append(mod)
            targets += [mod + [alias.name] for alias in node.names]  # `from . import module`
        elif isinstance(node, ast.Import):
            targets += [a.name.split(".")[1:] for a in node.names if a.name.split(".")[0] == "bloomdb"]
        for parts in targets:
            f = _module_file(parts)
            if f is not None and f != path:
                found.add(f)
    return tuple(sorted(found))


@lru_cache(maxsize=None)
def closure_digest(path: str) -> bytes:
    """SHA-256 over ``path`` and every bloomdb file it imports, transitively (sorted, named)."""
    seen: set[str] = set()
    todo = [os.path.abspath(path)]
    while todo:
        f = todo.pop()
        if f in seen:
            continue
        seen.add(f)
        todo.extend(imported_files(f))
    h = hashlib.sha256()
    for f in sorted(seen):
        h.update(os.path.relpath(f, PACKAGE_DIR).encode() + b"\0")
        with open(f, "rb") as fh:
            h.update(hashlib.sha256(fh.read()).digest())
    return h.digest()


def _inside_package(py_file: str) -> bool:
    return os.path.abspath(py_file).startswith(PACKAGE_DIR + os.sep)


class _ClosureStamp:
    """Mixin: a bloomdb file's stamp covers the bloomdb modules it imports."""

    def get_source_stamp(self):
        return ("bloomdb-closure-v1", closure_digest(self._py_file))

    @classmethod
    def from_function(cls, py_func, py_file):
        if not _inside_package(py_file):
            return None
        return super().from_function(py_func, py_file)


class UserProvidedLocator(_ClosureStamp, caching.UserProvidedCacheLocator):
    """``NUMBA_CACHE_DIR``, when set."""


class InTreeLocator(_ClosureStamp, caching.InTreeCacheLocator):
    """``__pycache__`` beside the module (where ``pip install`` puts the precompiled kernels)."""


class UserWideLocator(_ClosureStamp, caching.UserWideCacheLocator):
    """The user-wide cache folder, when the package folder is read-only."""


LOCATORS = (UserProvidedLocator, InTreeLocator, UserWideLocator)


def install() -> None:
    """Put bloomdb's locators first in numba's list (idempotent)."""
    classes = caching.CacheImpl._locator_classes
    for cls in reversed(LOCATORS):
        if cls not in classes:
            classes.insert(0, cls)
