"""The LSM store's layers import only downwards (issue 14): ``lsm/sstable/``, ``lsm/probe/`` and
``lsm/compaction/`` never import a module of the parent ``lsm`` package, and the kernels of each
layer live in it; ``DB`` is a thin front over modules with one job each."""

from __future__ import annotations

import ast
import pathlib

import pytest

import bloomdb.lsm
from bloomdb.lsm.options import MAX_LEVELS
from bloomdb.lsm.probe import layout

LSM = pathlib.Path(bloomdb.lsm.__file__).parent
#: The parent package's modules a layer folder may use: none.
ALLOWED_UP = {"sstable": set(), "probe": set(), "compaction": set()}


def _parent_imports(path: pathlib.Path) -> set[str]:
    """Modules of the parent ``lsm`` package that ``path`` (one folder down) imports."""
    out = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom) and node.level == 2:
            if node.module:
                out.add(node.module.split(".")[0])
            else:
                out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and (node.module or "").startswith("bloomdb.lsm."):
            out.add(node.module.split(".")[2])
    return out


@pytest.mark.parametrize("layer", sorted(ALLOWED_UP))
def test_a_layer_imports_only_downwards(layer):
    siblings = set(ALLOWED_UP) - {layer}
    for path in sorted((LSM / layer).glob("*.py")):
        up = _parent_imports(path) - siblings - ALLOWED_UP[layer]
        assert not up, f"{path.name} imports the parent lsm package's {sorted(up)}"
        if layer == "sstable":  # the lowest layer: no other layer either
            assert not (_parent_imports(path) & siblings), path.name


def test_probe_and_compaction_do_not_import_each_other_and_the_kernels_are_split_by_job():
    for path in (LSM / "probe").glob("*.py"):
        assert "compaction" not in _parent_imports(path), path.name
    for path in (LSM / "compaction").glob("*.py"):  # shared intrinsics live in bloomdb._intrinsics
        assert "probe" not in _parent_imports(path), path.name
    assert not (LSM / "_lsm_kernels.py").exists()


def test_the_directory_header_has_room_for_every_level():
    assert MAX_LEVELS - 1 <= layout.MAX_LISTED_LEVELS
    names = [n for n in dir(layout) if n.startswith(("S_", "P_")) and n not in ("P_LAZY", "P_LOADED", "P_OTHER", "P_DAMAGED")]
    slot = sorted(getattr(layout, n) for n in names if n.startswith("S_"))
    # the filter record (R_* fields) is the last field of a slot and of a partition entry
    assert max(slot) == layout.S_REC and layout.S_REC + layout.RSTRIDE == layout.STRIDE
    assert max(getattr(layout, n) for n in names if n.startswith("P_")) == layout.P_REC
    assert layout.P_REC + layout.RSTRIDE == layout.PSTRIDE
    rec = sorted(getattr(layout, n) for n in dir(layout) if n.startswith("R_"))
    assert rec == list(range(len(rec))) and layout.R_P0 + layout.NUM_SCALARS == layout.RSTRIDE
    # the bound search reads a bound's prefix words, then its offset and length (sstable._block_kernels._first_not_below)
    assert layout.S_MAX_OFF == layout.S_MAX_W + 2 and layout.S_MAX_LEN == layout.S_MAX_W + 3
    assert (layout.P_LAST_W, layout.P_LAST_OFF, layout.P_LAST_LEN) == (0, 2, 3)


def test_db_is_a_thin_front():
    """Recovery, background scheduling and table reads live in their own modules (LevelDB's
    ``db_impl`` / ``version_set`` / ``table_cache`` split), not in ``db.py``."""
    src = (LSM / "db.py").read_text()
    for gone in ("def _recover", "def _bg_loop", "def _pick", "def _resolve", "def _compact_levels", "fcntl"):
        assert gone not in src, gone
    assert len(src.splitlines()) < 600
