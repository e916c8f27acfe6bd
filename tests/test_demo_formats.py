"""The demo section of the format families runs and shows Parquet pruning."""

from bloomdb.cli import demo, demo_formats
from bloomdb.filters.leveldb import LevelDBBloom


def test_demo_formats_section(capsys):
    assert demo_formats.section in [fn for _, fn in demo._sections()]
    demo_formats.section()
    out = capsys.readouterr().out
    assert "register:1" in out and "register:2" in out
    assert LevelDBBloom.build([b"hello", b"world"], 10).to_leveldb_bytes().hex() in out
    assert "id=      4: read row groups []" in out  # 4 is not a multiple of 3: no row group holds it
    assert "id=      3: read row groups [0" in out
