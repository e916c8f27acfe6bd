import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "default", deadline=None, max_examples=60, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci", deadline=None, max_examples=100, suppress_health_check=[HealthCheck.too_slow]
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
