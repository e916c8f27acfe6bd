"""Cold start: how long a new user's first calls take after a plain ``pip install`` of bloomdb.

    python benchmarks/cold_start.py                   # fresh venv, plain `pip install .`, measure
    python benchmarks/cold_start.py --no-precompile   # the same without the build-time warmup
    python benchmarks/cold_start.py --python .venv/bin/python   # an existing environment, empty caches

Fresh venv: every scenario starts from the numba cache exactly as ``pip install`` left it (the
package's ``__pycache__`` files are put back after each scenario), runs in a new process ("cold":
what the first such call costs after installing), then once more ("warm": the second run of the
same program). With ``--python``, each scenario gets an empty ``NUMBA_CACHE_DIR`` of its own
instead (what an editable install costs before anything is cached). Figures are wall-clock seconds
of the whole process (interpreter start included) and, in brackets, of the scenario's own code.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
import venv

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)

PRELUDE = "import time as _t; _t0 = _t.perf_counter()\n"
EPILOGUE = "\nprint('SCENARIO_SECONDS', _t.perf_counter() - _t0)\n"

SCENARIOS = {
    "import bloomdb": "import bloomdb\nfrom bloomdb import filters\n",
    "README filters snippet": """
import numpy as np
from bloomdb import filters
f = filters.create("blocked:10", capacity=1_000_000)
f.add_many(np.arange(1_000_000, dtype=np.uint64))
f.add("alice")
f.might_contain("alice")
f.might_contain_many(["bob", "alice"])
f.save("users.blm"); g = filters.open("users.blm", mmap=True)
""",
    "first Parquet read": """
import numpy as np
from bloomdb import parquet
pc = parquet.ParquetColumns("events.parquet")
values, valid = pc.read(row_group=0, column="amount", positions=np.array([3, 20_000]))
""",
    "LSM open/put/get": """
from bloomdb.lsm import DB, Options
with DB.open("store", Options(filter="blocked:10")) as db:
    db.put(b"alice", b"1"); db.get(b"alice"); db.multi_get([b"alice", b"nobody"])
""",
    "LSM reopen (recovery) + get": """
from bloomdb.lsm import DB
with DB.open("store") as db:
    db.get(b"alice"); list(db.scan(b"a", b"z"))
""",
    "first join": """
import os, tempfile, numpy as np, pyarrow as pa
from bloomdb import columnar
from bloomdb.join import hash_join
facts = os.path.join(tempfile.mkdtemp(dir="."), "facts")
columnar.write(facts, pa.table({"k": np.arange(100_000), "v": np.ones(100_000)}))
hash_join(facts, pa.table({"k": np.arange(0, 100_000, 7)}), on="k", aggregates=["sum(v)", "count(*)"])
""",
}

SETUP = """
import numpy as np, pyarrow as pa, pyarrow.parquet as pq
pq.write_table(pa.table({"user_id": np.arange(0, 300_000, 3), "amount": np.linspace(0, 1, 100_000)}),
               "events.parquet", row_group_size=25_000)
"""


def make_env(root: str, precompile: bool) -> str:
    """A fresh virtualenv under ``root`` with bloomdb installed as a user would (not editable)."""
    env = os.path.join(root, "venv")
    venv.EnvBuilder(with_pip=True).create(env)
    py = os.path.join(env, "bin", "python")
    extra = {} if precompile else {"BLOOMDB_NO_PRECOMPILE": "1"}
    subprocess.run([py, "-m", "pip", "install", "--quiet", REPO], check=True, env=dict(os.environ, **extra))
    return py


def cache_files(py: str) -> dict[str, bytes]:
    """Every numba cache file inside the installed package, with its bytes."""
    pkg = subprocess.run([py, "-c", "import bloomdb, os; print(os.path.dirname(bloomdb.__file__))"],
                         capture_output=True, text=True, check=True, env=_clean_env()).stdout.strip()
    out = {}
    for d, _, files in os.walk(pkg):
        for f in files:
            if f.endswith((".nbi", ".nbc")):
                with open(os.path.join(d, f), "rb") as fh:
                    out[os.path.join(d, f)] = fh.read()
    return out


def restore(snapshot: dict[str, bytes], py: str) -> None:
    for path in set(cache_files(py)) - set(snapshot):
        os.remove(path)
    for path, data in snapshot.items():
        with open(path, "wb") as fh:
            fh.write(data)


def _clean_env(cache: str | None = None) -> dict:
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.pop("NUMBA_CACHE_DIR", None)
    if cache:
        env["NUMBA_CACHE_DIR"] = cache
    return env


def run(py: str, code: str, cwd: str, cache: str | None) -> tuple[float, float]:
    env = _clean_env(cache)
    t = time.perf_counter()
    out = subprocess.run([py, "-c", PRELUDE + code + EPILOGUE], cwd=cwd, env=env, capture_output=True, text=True)
    wall = time.perf_counter() - t
    if out.returncode != 0:
        raise SystemExit(f"scenario failed:\n{out.stderr}")
    inner = float(out.stdout.split("SCENARIO_SECONDS")[-1])
    return wall, inner


def measure(py: str, root: str, installed_cache: bool) -> list[tuple[str, float, float, float, float]]:
    """Each scenario cold then warm. ``installed_cache``: start each from the package's own cache
    as installed (restored after); otherwise from an empty ``NUMBA_CACHE_DIR`` of its own."""
    rows = []
    work = os.path.join(root, "work")
    os.makedirs(work, exist_ok=True)
    subprocess.run([py, "-c", SETUP], cwd=work, check=True, env=_clean_env())
    snapshot = cache_files(py) if installed_cache else None
    print(f"  ({len(snapshot)} cache files installed with the package)" if installed_cache else "  (empty caches)")
    cache = None
    for name, code in SCENARIOS.items():
        reopen = name.startswith("LSM reopen")  # the store program's second run: recovery's kernels are new
        if not installed_cache and not reopen:
            cache = tempfile.mkdtemp(prefix="numba-", dir=root)
        if installed_cache and not reopen:
            restore(snapshot, py)
        cold = run(py, code, work, cache)
        warm = run(py, code, work, cache)
        rows.append((name, *cold, *warm))
        print(f"  {name:<30} cold {cold[0]:6.2f} s ({cold[1]:6.2f})   warm {warm[0]:6.2f} s ({warm[1]:6.2f})", flush=True)
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--python", help="use this interpreter's environment instead of a fresh venv")
    ap.add_argument("--no-precompile", action="store_true", help="install with BLOOMDB_NO_PRECOMPILE=1")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="bloomdb-cold-") as root:
        if args.python:
            py = args.python
        else:
            t = time.perf_counter()
            py = make_env(root, precompile=not args.no_precompile)
            print(f"fresh venv + pip install {REPO}{' (no precompile)' if args.no_precompile else ''}: "
                  f"{time.perf_counter() - t:.0f} s")
        print("cold start: whole process, (scenario code)")
        measure(py, root, installed_cache=not args.python)
    return 0


if __name__ == "__main__":
    sys.exit(main())
