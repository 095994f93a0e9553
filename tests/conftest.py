"""Shared fixtures: where the read-only shared/ data lives, and the property tests' example counts."""

import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

REPO = Path(__file__).resolve().parents[1]


def find_shared() -> Path | None:
    """shared/ sits beside the checkout (../shared), or where WHO_WAITS_SHARED points."""
    for candidate in (os.environ.get("WHO_WAITS_SHARED"), REPO.parent / "shared"):
        if candidate and (Path(candidate) / "data").is_dir():
            return Path(candidate)
    return None


@pytest.fixture(scope="session")
def shared_dir() -> Path:
    found = find_shared()
    if found is None:
        if os.environ.get("CI"):
            pytest.fail("shared/ data not found beside the checkout; CI must have it")
        pytest.skip("shared/ data not found (set WHO_WAITS_SHARED)")
    return found


# The soak: WHO_WAITS_SOAK=1 runs the model's invariant properties (tests/test_properties.py,
# tests/test_pd_properties.py) with 10,000 examples each (WHO_WAITS_SOAK_EXAMPLES=N for another count).
# CI leaves it unset and keeps each test's own small count.
settings.register_profile(
    "soak", max_examples=int(os.environ.get("WHO_WAITS_SOAK_EXAMPLES", "10000")), deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large], print_blob=True)


def examples(ci: int) -> int:
    """How many examples a property test runs: its CI count, or the soak profile's under WHO_WAITS_SOAK=1."""
    return settings.get_profile("soak").max_examples if os.environ.get("WHO_WAITS_SOAK") == "1" else ci
