import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow]
)
# CI runs as many examples as a local run (the suite's time budget is measured without CI set);
# it prints the failing example's blob so a CI failure can be replayed locally
settings.register_profile(
    "ci", deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow], print_blob=True
)
settings.load_profile("ci" if os.environ.get("CI") else "default")

SHARED = Path(__file__).resolve().parents[1].parent / "shared"
VECTORS = SHARED / "vectors"


@pytest.fixture
def vectors_dir() -> Path:
    """``../shared/vectors`` beside the checkout; tests that need it skip when it is absent."""
    if not VECTORS.is_dir():
        pytest.skip(f"reference vectors not found at {VECTORS} (shared/ is not beside this checkout)")
    return VECTORS
