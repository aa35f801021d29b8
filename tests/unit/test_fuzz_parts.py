"""A short seeded fuzz of version-4 frame parts (the timed run is scripts/fuzz_recordings.py):
damaged parts, with CRCs re-fixed so the damage passes them, give no traceback, one-line
messages, valid UTF-8 output without control characters, and a bounded peak of memory."""

from __future__ import annotations

import random
import tracemalloc
from pathlib import Path

import pytest

from tests.support.budget import examples
from tests.support.fuzz_parts import check_case, mutate_parts
from tests.support.hostile_parts import write_parts_recording

SEED = 3701
CASES = examples(30)
"""30 under the default profile (``make test``), the first 6 of the same sequence under
``fast`` (a case is about a second: the reader, ``snapshot --from``, every third ``bundle``)."""
GROUP = 5
"""Cases per test: each group is its own test, so the groups run on different workers and one
slow group does not hold the others' time."""
MEASURED = 3
"""Every third case is run under tracemalloc (which halves the speed) for its peak memory."""
NAME = "iotop-plus-000001-20231114-221330.rec"


@pytest.mark.slow  # seconds a case on a busy host: in make test, not in test-fast
@pytest.mark.parametrize("first", range(0, CASES, GROUP))
def test_damaged_parts_never_give_a_traceback(
    first: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TZ", "UTC")
    base = tmp_path / "base.rec"
    write_parts_recording(base, 90)
    data = base.read_bytes()
    rng = random.Random(SEED)
    for _ in range(first):  # the same sequence of cases, whichever group runs them
        mutate_parts(data, rng)
    directory = tmp_path / "case"
    directory.mkdir(mode=0o700)
    path = directory / NAME
    for case in range(first, min(first + GROUP, CASES)):
        damaged = mutate_parts(data, rng)
        path.write_bytes(damaged)
        measured = case % MEASURED == 0
        if measured:
            tracemalloc.start()
        try:
            check_case(path, tmp_path / "state", case)
            peak = tracemalloc.get_traced_memory()[1] >> 20
        except BaseException as exc:
            keep = tmp_path.parent / f"parts-case-{case}.rec"
            keep.write_bytes(damaged)
            raise AssertionError(f"case {case} ({keep}): {type(exc).__name__}: {exc}") from exc
        finally:
            if measured:
                tracemalloc.stop()
        assert peak < 256, f"case {case}: {peak} MiB"
