"""How much work the suite does: sized for CI by default, the full volumes with ``EGG_TEST_FULL=1``.

One switch for both kinds of volume: the number of examples every hypothesis test tries (the
``ci`` and ``full`` settings profiles, loaded by tests/conftest.py) and the repetitions of the
churn and flood tests (:func:`volume`). CI on a shared 2-core host runs the small volumes, which
still exercise every path; a local run before a release runs the full ones.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

#: the environment variable that asks for the full volumes ("1"; unset or "0": CI's)
FULL_ENV = "EGG_TEST_FULL"
FULL = os.environ.get(FULL_ENV, "0") not in ("", "0")

#: examples per hypothesis test, CI's and the full run's
CI_EXAMPLES = 100
FULL_EXAMPLES = 2000


def volume(ci: int, full: int) -> int:
    """A repetition count: ``full`` with EGG_TEST_FULL=1, else ``ci``."""
    return full if FULL else ci


def register_profiles() -> None:
    """The hypothesis profiles, and the one this run uses. Neither has a deadline nor the
    too-slow health check: both measure wall time, which a busy host stretches (a test must not
    fail because another run shares the machine)."""
    common = settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
    settings.register_profile("ci", common, max_examples=CI_EXAMPLES)
    settings.register_profile("full", common, max_examples=FULL_EXAMPLES)
    settings.load_profile("full" if FULL else "ci")
