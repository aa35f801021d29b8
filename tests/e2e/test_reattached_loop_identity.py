"""A device is its identity, not its name: a loop device detached and attached again, under the
same number, to another file shows the new file's size and backing file within two frames,
and its chart history starts afresh."""

from __future__ import annotations

import math
import subprocess
from pathlib import Path

import pytest

from iotop_plus.record.store import FrameStore
from iotop_plus.sampling.frame.live import LiveSource
from tests.support.loopdev import (
    attach,
    bound_to,
    detach,
    require_loop_devices,
    start_at_loop_defaults,
)
from tests.support.wait import holds_within

pytestmark = [pytest.mark.root]


def _backing(dev: str) -> str | None:
    try:
        return Path(f"/sys/block/{dev}/loop/backing_file").read_text().strip()
    except OSError:
        return None


#: Whole tries of the scenario: another process may take the number in the moment between
#: the detach and the attach again (a busy host attaches loop devices all the time).
TRIES = 5


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    """Two backing files of our own: 16 MiB and 48 MiB."""
    require_loop_devices()
    first, second = tmp_path / "first.img", tmp_path / "second.img"
    with open(first, "xb") as fh:
        fh.truncate(16 << 20)
    with open(second, "xb") as fh:
        fh.truncate(48 << 20)
    return first, second


def _reattach(name: str, second: Path) -> bool:
    """Detach ``name`` and attach it to ``second`` at once, retrying while the kernel still
    finishes the detach (EBUSY); False when someone else took the number meanwhile."""
    subprocess.run(["losetup", "-d", f"/dev/{name}"], check=True)

    def attached() -> bool:
        done = subprocess.run(["losetup", f"/dev/{name}", str(second)], capture_output=True)
        return done.returncode == 0 or _backing(name) is not None

    assert holds_within(attached, 10), f"could not attach {name} again"
    return _backing(name) == str(second)


def test_a_reattached_loop_device_shows_its_new_facts_within_two_frames(
    files: tuple[Path, Path],
) -> None:
    first, second = files
    for _ in range(TRIES):
        name = attach(first)
        try:
            start_at_loop_defaults(name)
            if _shows_the_new_facts(name, first, second):
                return
        finally:
            for backing in (first, second):
                for dev in bound_to(backing):
                    detach(dev, backing)
    pytest.fail(f"another process took the loop number between detach and attach {TRIES} times")


def _shows_the_new_facts(name: str, first: Path, second: Path) -> bool:
    """The scenario on ``name`` (attached to ``first``); False when the number was taken by
    someone else between the detach and the attach again (nothing was checked)."""
    source = LiveSource()
    store = FrameStore()
    try:
        frames = [source.next_frame() for _ in range(3)]
        for f in frames:
            store.append(f)
        before = frames[-1].inventory.get(name)
        assert before is not None and before.loop_backing_file == str(first)
        assert before.size_bytes == 16 << 20
        assert len(store.columns(name, 0.0, math.inf).with_rates()) >= 2
        old_identity = frames[-1].sample.identities[name]
        if not _reattach(name, second):
            return False
        seen = []
        for _ in range(2):
            frame = source.next_frame()
            store.append(frame)
            seen.append(frame)
        after = seen[-1].inventory.get(name)
        assert after is not None
        assert after.loop_backing_file == str(second), after
        assert after.size_bytes == 48 << 20
        assert seen[-1].sample.identities[name] != old_identity
        kept = store.columns(name, 0.0, math.inf).walls
        assert len(kept) and kept[0] >= seen[0].wall_time, "the old device's is not in its series"
        return True
    finally:
        source.close()
