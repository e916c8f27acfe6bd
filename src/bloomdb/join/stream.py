"""Result rows as a stream: ``hash_join(..., stream=True)`` returns a ``pyarrow.RecordBatchReader``.

Chunks are scanned by the thread pool a few at a time ahead of the reader (:func:`.scan.scan_all`
keeps at most 4 x threads chunk results waiting), so a result larger than memory never sits in
RAM: each batch is one probe chunk's result rows, in probe order; right and full joins end with
one batch of the build rows no probe row matched (the build side is held in memory, as in every
hash join). ``explain`` statistics are complete once the reader has been read to the end.
"""

from __future__ import annotations

from typing import Any, Callable, Iterable, Iterator

import pyarrow as pa


def batches(sink: Any, results: Iterable[Any], tail: Callable[[], pa.RecordBatch | None]) -> Iterator[pa.RecordBatch]:
    """Each chunk result's rows as a batch of ``sink.schema``, then ``tail()`` (if not None)."""
    for r in results:
        b = sink.batch(r)
        if b is not None:
            yield b
    last = tail()
    if last is not None:
        yield last


def reader(schema: pa.Schema, it: Iterator[pa.RecordBatch]) -> pa.RecordBatchReader:
    return pa.RecordBatchReader.from_batches(schema, it)
