"""#25: the history ring keeps a frame's counters as one big-number difference from the frame
before's; it comes back exact whatever the counters did."""

from __future__ import annotations

import random
from array import array

from iotop_plus.sampling.store.packed import _minus, _plus


def test_a_difference_comes_back_exact_when_counters_fall_wrap_or_go_negative() -> None:
    rng = random.Random(25)
    top = 2**63 - 1
    for _ in range(200):
        n = rng.randrange(1, 40)
        before = array(
            "q", (rng.choice([0, 5, top, -top - 1, rng.randrange(-top, top)]) for _ in range(n))
        )
        after = array("q", (v if rng.random() < 0.5 else rng.randrange(-top, top) for v in before))
        change = _minus(after.tobytes(), before.tobytes())
        assert len(change) == 8 * n
        assert _plus(change, before.tobytes()) == after.tobytes()


def test_counters_that_grew_a_little_differ_in_their_low_bytes_only() -> None:
    before = array("q", [10**12, 7, 10**15, 3])
    after = array("q", [10**12 + 5, 7, 10**15 + 300, 3])
    change = array("q")
    change.frombytes(_minus(after.tobytes(), before.tobytes()))
    assert list(change) == [5, 0, 300, 0]
