"""``diff`` on hostile or corrupt recordings: never a traceback, exit 0 or 1 with one-line
messages, on the seeded mutated copies the reader's own hostile test uses (bit rot, cuts,
lying trailers and records, bombs), through both ways of reading a window (every sample, and
the per-minute roll-ups with the JSON records read alone)."""

from __future__ import annotations

import io
import random
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest

from iotop_plus.cli import main
from iotop_plus.commands.diff import diff_timeline
from iotop_plus.record.format import FormatError
from iotop_plus.record.timeline import open_timeline
from tests.support.budget import examples
from tests.support.hostile_recordings import mutate, write_small_recording

SEED = 4513
CASES = examples(120)


@pytest.fixture(scope="module")
def original(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = tmp_path_factory.mktemp("orig") / "iotop-plus-000001-20231114-221330.rec"
    write_small_recording(path, 200)
    return path.read_bytes()


def diff_in_process(path: Path) -> None:
    warnings: list[str] = []
    try:
        timeline = open_timeline(path, warn=warnings.append)
    except (FormatError, OSError):
        return
    try:
        span = timeline.span()
        if span is None:
            return
        lo, hi = span
        mid = (lo + hi) / 2
        diff_timeline(timeline, (lo, mid), (mid, hi))  # short: every sample
        timeline_minutes = (lo - 1200, mid), (mid, hi + 1200)  # long: the roll-ups
        diff_timeline(timeline, *timeline_minutes)
    finally:
        timeline.close()
    assert all("\n" not in w for w in warnings)


@pytest.mark.timeout(600)
def test_mutated_recordings_never_give_a_traceback(original: bytes, tmp_path: Path) -> None:
    rng = random.Random(SEED)
    for case in range(CASES):
        path = tmp_path / f"case-{case}.rec"
        path.write_bytes(mutate(original, rng))
        try:
            diff_in_process(path)
            out, err = io.StringIO(), io.StringIO()
            with redirect_stdout(out), redirect_stderr(err):
                code = main(["diff", "--from", str(path), "--b", "@1699999000..@1700009000",
                             "-f", "json"])  # fmt: skip
            assert code in (0, 1), (code, err.getvalue())
            assert "Traceback" not in err.getvalue()
            assert all(line.startswith("iotop-plus: ") for line in err.getvalue().splitlines())
        except BaseException as exc:
            keep = tmp_path.parent / f"hostile-diff-case-{case}.rec"
            keep.write_bytes(path.read_bytes())
            raise AssertionError(f"case {case} ({keep}): {type(exc).__name__}: {exc}") from exc
        path.unlink()
