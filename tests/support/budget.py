"""How many cases a property or seeded fuzz test runs: the full count in ``make test``, fewer
in ``make test-fast``.

``make test-fast`` loads the hypothesis profile ``fast`` (registered in tests/conftest.py,
selected with ``--hypothesis-profile fast``). A test states its full count once, as
``@settings(max_examples=examples(400))`` or ``range(examples(300))``; under the default
profile (100 examples) that is the count itself, under ``fast`` it is scaled down by the
profile's ``max_examples`` against the default's. A seeded fuzz then runs the first cases of
the very same sequence, so the fast lane is a prefix of the full run, never other inputs.
"""

from __future__ import annotations

from hypothesis import settings

FULL = 100
"""hypothesis' default ``max_examples``: the profile at which a test runs its full count."""

FLOOR = 10
"""The fewest cases a scaled test runs."""


def examples(full: int, floor: int = FLOOR) -> int:
    """``full`` under the default profile; scaled to the loaded profile's ``max_examples``
    (never below ``floor``, never above ``full``)."""
    profile = settings.default
    wanted = full * (FULL if profile is None else profile.max_examples) // FULL
    return min(full, max(floor, wanted))
