"""Leveled compaction: :mod:`.policy` decides (pure), :mod:`.executor` does the I/O."""
