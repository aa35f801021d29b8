"""Retention by age and total size, checked at every chunk; files are only ever deleted."""

from __future__ import annotations

import os
import time
from pathlib import Path

from iotop_plus.record.chunks import RecordedSample
from iotop_plus.record.recorder import Recorder, recording_files
from tests.unit.test_record_format import make_samples


def test_old_and_excess_files_are_deleted_at_chunk_ends(tmp_path: Path) -> None:
    rec_dir = tmp_path / "rec"
    rec_dir.mkdir(mode=0o700)
    old = rec_dir / "iotop-plus-20200101-000000.rec"
    old.write_bytes(b"x" * 10)
    os.utime(old, (time.time() - 10 * 86400,) * 2)
    big = rec_dir / "iotop-plus-20200102-000000.rec"
    big.write_bytes(b"y" * 50_000)
    other = rec_dir / "notes.txt"  # not a recording: never touched
    other.write_text("mine")
    lines: list[str] = []
    recorder = Recorder(
        rec_dir, lambda: {"inventory": []}, retain_s=7 * 86400, max_bytes=40_000, warn=lines.append
    )
    for s in make_samples(90):  # crosses a minute boundary: one chunk closes
        recorder.write(RecordedSample(s))
    names = [p.name for p in recording_files(rec_dir)]
    assert old.name not in names and big.name not in names
    assert other.read_text() == "mine"
    # --max-size rotates the open file (every max-size/8 bytes): several files, all ours.
    assert len(names) > 1 and all(n.startswith("iotop-plus-0000") for n in names), names
    # What is closed fits; the open file grows up to max-size/8 between two checks.
    assert sum(os.path.getsize(rec_dir / n) for n in names[:-1]) <= 40_000
    assert os.path.getsize(rec_dir / names[-1]) <= 40_000 / 8 + 2_000
    recorder.close()
    assert all(oct(os.stat(rec_dir / n).st_mode & 0o777) == "0o600" for n in names)
