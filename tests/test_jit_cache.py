"""numba's cache never runs a kernel compiled against an older version of a helper it imports."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap

import bloomdb
from bloomdb import _jit_cache

KERNEL = textwrap.dedent('''
    from numba import njit

    from ._probe_helper import helper


    @njit(cache=True, nogil=True)
    def probe():
        return helper() * 10
''')
HELPER = textwrap.dedent('''
    from numba import njit


    @njit(cache=True, nogil=True)
    def helper():
        return {value}
''')
RUN = "from bloomdb import _probe_kernels as k; print(k.probe())"


def _run(root: str) -> int:
    env = dict(os.environ, PYTHONPATH=root)
    env.pop("NUMBA_CACHE_DIR", None)
    out = subprocess.run([sys.executable, "-c", RUN], env=env, capture_output=True, text=True, check=True)
    return int(out.stdout.strip())


def test_a_changed_helper_in_another_module_recompiles_its_callers(tmp_path):
    """numba alone stamps ``probe`` with its own file only and would keep returning 10."""
    pkg = tmp_path / "bloomdb"
    shutil.copytree(os.path.dirname(bloomdb.__file__), pkg, ignore=shutil.ignore_patterns("__pycache__"))
    (pkg / "_probe_kernels.py").write_text(KERNEL)
    (pkg / "_probe_helper.py").write_text(HELPER.format(value=1))
    assert _run(str(tmp_path)) == 10
    assert list((pkg / "__pycache__").glob("_probe_kernels.probe-*.nbi"))  # it was cached
    (pkg / "_probe_helper.py").write_text(HELPER.format(value=2))
    assert _run(str(tmp_path)) == 20


def test_imports_are_followed_transitively():
    pkg = _jit_cache.PACKAGE_DIR
    direct = _jit_cache.imported_files(os.path.join(pkg, "filters", "_blocked_kernels.py"))
    assert os.path.join(pkg, "_intrinsics.py") in direct
    base = os.path.join(pkg, "filters", "base.py")
    assert os.path.join(pkg, "keys.py") in _jit_cache.imported_files(base)
    assert _jit_cache.closure_digest(base) != _jit_cache.closure_digest(os.path.join(pkg, "keys.py"))


def test_bloomdb_kernels_use_the_closure_locator():
    from bloomdb.filters import _blocked_kernels

    assert isinstance(_blocked_kernels.add_hashes._cache._impl._locator, _jit_cache.LOCATORS)


def test_the_lsm_probe_kernels_stamp_covers_every_family_kernel_it_calls():
    """The LSM's probe kernel compiles in every filter family's ``check_hash`` (the modules
    ``filters.probe.PROBE_KERNELS`` names) and the block kernels' bound search: an edit to any
    of them must change the probe kernel's cache stamp."""
    import importlib

    from bloomdb.filters.probe import PROBE_KERNELS

    pkg = _jit_cache.PACKAGE_DIR
    probe = os.path.join(pkg, "lsm", "probe", "_probe_kernels.py")
    seen, todo = set(), [probe]
    while todo:
        f = todo.pop()
        if f not in seen:
            seen.add(f)
            todo.extend(_jit_cache.imported_files(f))
    want = {importlib.import_module(m).__file__ for m in set(PROBE_KERNELS.values())}
    want |= {os.path.join(pkg, "lsm", "probe", "layout.py"), os.path.join(pkg, "lsm", "sstable", "_block_kernels.py"),
             os.path.join(pkg, "hashing", "_leveldb_kernels.py")}
    assert want <= seen, sorted(want - seen)
