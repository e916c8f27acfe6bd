"""Command-line tools (thin: argument parsing and printing only)."""
