"""Benchmarks that print figures (ns/key, ops/s, bytes/key, FPR). Never timed assertions."""
