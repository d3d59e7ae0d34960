"""Where things are, for tests in any subfolder, and the one rule for what lives outside
the repository.

``../shared`` (Kafka's Java reader and writer ``tools/kafka-java``, Kafka-written
fixtures) sits next to the checkout on CI, not in a user's clone.  A test that needs it
calls :func:`require_shared`: without it the test SKIPS with one reason naming what is
missing; where it is required (:func:`shared_required`: ``CI=true``, or
``KAFKAREC_REQUIRE_SHARED=1``) it FAILS instead, so CI never passes by skipping.
"""
import os
from typing import Mapping, Optional

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # this file is tests/support/paths.py
ROOT = os.path.dirname(TESTS)                          # the repository
SHARED = os.path.join(os.path.dirname(ROOT), "shared")  # ../shared, as CI has it

#: Environment variables that make ../shared required (their value must be true).
REQUIRE_SHARED_VARIABLES = ("CI", "KAFKAREC_REQUIRE_SHARED")
_TRUE = ("1", "true", "yes", "on")


def shared_required(env: Optional[Mapping[str, str]] = None) -> bool:
    """Whether a missing ../shared is a failure here (CI) rather than a skip (a clone)."""
    env = os.environ if env is None else env
    return any(env.get(name, "").strip().lower() in _TRUE for name in REQUIRE_SHARED_VARIABLES)


def shared_decision(what: str, path: str, env: Optional[Mapping[str, str]] = None):
    """``None`` when ``path`` exists, else ``("skip" | "fail", reason)``."""
    if os.path.exists(path):
        return None
    reason = (f"{what} is missing: {path} comes from ../shared, which is not next to this "
              "checkout")
    if shared_required(env):
        return "fail", reason + " (required: CI=true or KAFKAREC_REQUIRE_SHARED=1)"
    return "skip", reason + " (skipped; CI runs it)"


def require_shared(what: str, path: str) -> str:
    """``path`` (under ../shared) if it exists; else skip the calling test, or fail it
    where ../shared is required.  Returns ``path``."""
    import pytest
    decision = shared_decision(what, path)
    if decision is not None:
        kind, reason = decision
        if kind == "fail":
            pytest.fail(reason, pytrace=False)
        pytest.skip(reason)
    return path
