"""The probe layer: which tables may hold a key, in one kernel call per key.

* :mod:`.layout` -- the probe directory's numbered words, named once for Python and the kernel;
* :mod:`._probe_kernels` -- the probe loop (key ranges, then each table's filter through its
  family's own kernel, chosen by the filter's probe descriptor kind);
* :mod:`.directory` -- builds a version's directory, loads filters lazily and answers in Python
  (the family's public contract) for filters the kernel does not run.

Imports go downwards only: :mod:`bloomdb.lsm.sstable` (tables, key-order kernels) and
:mod:`bloomdb.filters` (the probe contract); never the parent ``lsm`` package's modules.
"""
