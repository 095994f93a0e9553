"""Shared fixtures: where the read-only shared/ data lives."""

import os
from pathlib import Path

import pytest

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
