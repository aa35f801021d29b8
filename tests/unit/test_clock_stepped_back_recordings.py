"""After the wall clock steps back, the newest recording is still the newest (#22 item 9).

Files carry a sequence number in the header and the name
(``iotop-plus-000123-YYYYMMDD-HHMMSS.rec``); retention and the timeline order by it, never
by the wall time in the name, and ``--max-size`` rotates the file being written.
"""

from __future__ import annotations

import os
from pathlib import Path
from types import MappingProxyType

from iotop_plus.record.chunks import RecordedSample
from iotop_plus.record.reader import RecordingFile
from iotop_plus.record.recorder import Recorder, recording_files
from iotop_plus.record.timeline import open_timeline
from iotop_plus.sampling.disks.sampler import Sample
from tests.unit.test_record_format import make_samples

T0 = 1_700_000_040.0  # 2023-11-14 22:14:00 UTC
DAY = 86_400.0


def shifted(samples: list[Sample], wall0: float) -> list[Sample]:
    """The samples with wall times from ``wall0`` (what a stepped clock gives them)."""
    return [
        Sample(s.monotonic, wall0 + k, MappingProxyType(dict(s.counters)))
        for k, s in enumerate(samples)
    ]


def run_recorder(directory: Path, samples: list[Sample], max_bytes: int | None) -> list[Path]:
    """One recorder run (a restart); the files it created."""
    before = set(recording_files(directory))
    recorder = Recorder(directory, lambda: {"inventory": []}, max_bytes=max_bytes, warn=print)
    for s in samples:
        recorder.write(RecordedSample(s))
    recorder.close()
    return sorted(set(recording_files(directory)) - before)


def test_after_the_clock_steps_back_max_size_keeps_the_newest_recording(tmp_path: Path) -> None:
    rec_dir = tmp_path / "rec"
    rec_dir.mkdir(mode=0o700)
    first = run_recorder(rec_dir, shifted(make_samples(100, seed=1), T0), None)
    # NTP steps the clock back a day; the recorder restarts.
    second = run_recorder(rec_dir, shifted(make_samples(100, seed=2), T0 - DAY), None)
    assert first and second
    size = sum(p.stat().st_size for p in second)
    third = run_recorder(
        rec_dir, shifted(make_samples(20, seed=3), T0 - DAY + 230), max_bytes=int(size * 1.5)
    )
    left = set(recording_files(rec_dir))
    assert not set(first) & left, "the oldest recording goes first"
    assert set(second) <= left, "the newest recordings survive whatever their names say"
    assert set(third) <= left
    seqs = [
        RecordingFile(p).header["seq"] for p in sorted(left, key=recording_files(rec_dir).index)
    ]
    assert seqs == sorted(seqs) and len(set(seqs)) == len(seqs)
    for p in left:  # the sequence number is in the name and the header alike
        assert p.name.startswith(f"iotop-plus-{RecordingFile(p).header['seq']:06d}-")


def test_max_size_rotates_the_file_being_written(tmp_path: Path) -> None:
    rec_dir = tmp_path / "rec"
    rec_dir.mkdir(mode=0o700)
    limit = 60_000
    recorder = Recorder(rec_dir, lambda: {"inventory": []}, max_bytes=limit, warn=print)
    for s in make_samples(400):
        recorder.write(RecordedSample(s))
        total = sum(p.stat().st_size for p in recording_files(rec_dir))
        assert total <= limit + limit / 8 + 2_000  # never a whole day in one file
    recorder.close()
    files = recording_files(rec_dir)
    assert recorder.files_started > 8 and len(files) >= 7
    assert all(os.path.getsize(p) <= limit / 8 + 2_000 for p in files)


def test_where_two_files_overlap_in_wall_time_the_later_one_wins(tmp_path: Path) -> None:
    rec_dir = tmp_path / "rec"
    rec_dir.mkdir(mode=0o700)
    run_recorder(rec_dir, shifted(make_samples(200, seed=1), T0), None)
    # The clock steps back 100 s: the second run covers wall times the first one has.
    later = shifted(make_samples(60, seed=2), T0 + 100)
    run_recorder(rec_dir, later, None)
    timeline = open_timeline(rec_dir)
    span = timeline.span()
    assert span is not None
    walls = [rs.sample.wall_time for rs, _ in timeline.frames(*span)]
    assert walls == sorted(walls) and len(walls) == len(set(walls)), "no minute twice"
    got = {round(rs.sample.wall_time): rs for rs, _ in timeline.frames(T0 + 100, T0 + 159)}
    for s in later:
        assert dict(got[round(s.wall_time)].sample.counters) == dict(s.counters)
    timeline.close()
