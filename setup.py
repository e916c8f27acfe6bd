"""Build hook: a wheel built from source carries its numba kernels already compiled.

``pip install bloomdb`` (from a source tree or sdist) builds the wheel on the machine that will run
it, so ``build_py`` runs ``bloomdb warmup`` against the freshly built package: numba compiles the
kernels a first call needs and stores them in the package's ``__pycache__`` folders, keyed by each
source file's SHA-256, the numba version and this CPU. The installed package then loads them on
first use instead of compiling (seconds instead of a minute). If anything differs at run time
(another numba or CPU) numba ignores those entries and compiles as usual: never stale, only slower.
Editable installs (``pip install -e``, ``make test``) skip this; set ``BLOOMDB_NO_PRECOMPILE=1``
to skip it anywhere. All metadata lives in pyproject.toml.
"""

import os
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py


class BuildPyWithKernels(build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False) or os.environ.get("BLOOMDB_NO_PRECOMPILE"):
            return
        # the built package first, then everything this build can import: pip's isolated build
        # environment reaches the interpreter through PYTHONPATH, which must not be replaced
        path = [os.path.abspath(self.build_lib)] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        env = dict(os.environ, PYTHONPATH=os.pathsep.join(path))
        env.pop("NUMBA_CACHE_DIR", None)  # the cache must land inside the package being built
        print("precompiling bloomdb's kernels (bloomdb warmup, about a minute) ...", flush=True)
        done = subprocess.run([sys.executable, "-m", "bloomdb.cli.main", "warmup"], env=env)
        if done.returncode != 0:
            print("warning: precompiling failed; kernels will compile on first use", flush=True)


setup(cmdclass={"build_py": BuildPyWithKernels})
