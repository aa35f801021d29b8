"""Decompression bombs in bundles and recordings stay small (issue #22 item 5).

A bundle comes from an incident ticket, written by someone else. A real bundle is made with
the real ``bundle`` command, then a frame is swapped for about 1 MB that inflates to 1 GiB;
the real console script reads it in a child whose peak memory (``ru_maxrss`` from ``wait4``,
in a small launcher) is measured. Children run under a 3 GiB address-space limit, so a reader
without the bounds fails with MemoryError instead of exhausting the machine.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from iotop_plus.record.format import FRAME, RECORD
from iotop_plus.record.reader import RecordingFile
from tests.support.hostile_recordings import (
    build,
    parse,
    raw_deflate_repeated,
    raw_deflate_zeros,
    with_frame,
    write_small_recording,
    zlib_zeros,
)

REPO = Path(__file__).resolve().parents[2]
GIB = 1 << 30
MIB = 1 << 20
NAME = "iotop-plus-000001-20231114-221330.rec"


LAUNCHER = """
import os, resource, subprocess, sys
resource.setrlimit(resource.RLIMIT_AS, (3 << 30, 3 << 30))
proc = subprocess.Popen(sys.argv[2:])
_, status, usage = os.wait4(proc.pid, 0)
with open(sys.argv[1], "w") as fh:
    fh.write(str(usage.ru_maxrss))
sys.exit(os.waitstatus_to_exitcode(status))
"""
"""Runs the command under the address-space limit and writes its peak RSS (KiB) to argv[1].

A child's ``ru_maxrss`` starts at its parent's resident size when it forks (the kernel keeps the
old memory's high-water mark across exec), so the console script is started from this small
launcher, not from the test process, which may have grown past the limit in an earlier test."""


def child(tmp: Path, *args: str) -> tuple[int, str, float]:
    """Run the console script; its exit code, stderr, and peak resident memory in MiB."""
    err_path, peak_path = tmp / "stderr.txt", tmp / "peak-kib.txt"
    with open(err_path, "w") as err, open(os.devnull, "w") as out:
        proc = subprocess.run(
            [sys.executable, "-c", LAUNCHER, str(peak_path),
             sys.executable, "-m", "iotop_plus", "--state-dir", str(tmp / "state"), *args],
            stdout=out, stderr=err, check=False,
            env={**os.environ, "PYTHONPATH": str(REPO), "TZ": "UTC"},
        )  # fmt: skip
    return proc.returncode, err_path.read_text(), int(peak_path.read_text()) / 1024


@pytest.fixture
def bundle(tmp_path: Path) -> bytes:
    """A real bundle, written by the real ``bundle`` command from a recording."""
    rec_dir = tmp_path / "rec"
    rec_dir.mkdir(mode=0o700)
    write_small_recording(rec_dir / NAME, 100)
    out = tmp_path / "real-bundle.rec"
    code, err, _ = child(tmp_path, "bundle", "--dir", str(rec_dir), "--last", "1h", "-o", str(out))
    assert code == 0, err
    return out.read_bytes()


def test_a_one_megabyte_bundle_bomb_does_not_inflate_to_a_gibibyte(
    tmp_path: Path, bundle: bytes
) -> None:
    bomb = raw_deflate_zeros(GIB)  # one sample's frame: 1 MB that inflates to 1 GiB
    path = tmp_path / "ticket-4711.rec"
    path.write_bytes(with_frame(bundle, b"S", bomb))
    assert path.stat().st_size < 2 * MIB
    code, err, peak = child(tmp_path, "snapshot", "--from", str(path), "-f", "json")
    assert "Traceback" not in err and code == 0, err  # the other chunks still read
    assert err.count("\n") == 1 and "more than 16 MiB" in err, err
    assert peak < 200, f"peak {peak:.0f} MiB"
    directory = tmp_path / "from-ticket"
    directory.mkdir(mode=0o700)
    os.rename(path, directory / NAME)
    code, err, peak = child(
        tmp_path, "bundle", "--dir", str(directory), "--last", "1h", "-o", str(tmp_path / "b.rec")
    )
    assert code == 0 and "Traceback" not in err and "more than 16 MiB" in err, err
    assert peak < 200, f"peak {peak:.0f} MiB"


def test_a_bomb_spread_over_many_frames_stops_at_the_chunk_limit(
    tmp_path: Path, bundle: bytes
) -> None:
    data = bundle
    prefix, frames, tail = parse(data)
    first_chunk = []
    for f in frames:
        if f.kind == b"T":
            break
        if f.kind in (b"S", b"X"):
            first_chunk.append(f)
    # Each frame 15 records of 1 MiB (of a type readers skip): under the frame limits.
    block = RECORD.pack(MIB - RECORD.size, b"z") + bytes(MIB - RECORD.size)
    piece = raw_deflate_repeated(block, 15)
    for f in first_chunk:
        f.payload = piece
    path = tmp_path / "ticket-4712.rec"
    path.write_bytes(build(prefix, frames, tail))
    assert len(first_chunk) * 15 > 256 and path.stat().st_size < 2 * MIB
    code, err, peak = child(tmp_path, "snapshot", "--from", str(path), "--overview")
    assert code in (0, 1) and "Traceback" not in err, err
    code, err, peak = child(tmp_path, "snapshot", "--from", str(path))
    assert code == 0 and "Traceback" not in err, err
    assert err.count("\n") == 1 and "more than 256 MiB" in err, err
    assert peak < 200, f"peak {peak:.0f} MiB"  # inflated a frame at a time, never whole


def test_a_header_bomb_is_one_line(tmp_path: Path, bundle: bytes) -> None:
    path = tmp_path / "ticket-4713.rec"
    path.write_bytes(with_frame(bundle, b"H", zlib_zeros(GIB)))
    code, err, peak = child(tmp_path, "snapshot", "--from", str(path))
    assert code == 1 and err.count("\n") == 1 and "Traceback" not in err, err
    assert "header" in err and "more than 16 MiB" in err, err
    assert peak < 200, f"peak {peak:.0f} MiB"


def test_a_frame_that_asks_for_64_gib_is_refused_by_its_length(
    tmp_path: Path, bundle: bytes
) -> None:
    # 63 MiB of compressed zeros inflate to 63 GiB: refused from the length field alone.
    path = tmp_path / "ticket-4714.rec"
    path.write_bytes(with_frame(bundle, b"S", raw_deflate_zeros(63 * GIB)))
    code, err, peak = child(tmp_path, "snapshot", "--from", str(path), "-f", "json")
    assert code == 0 and "Traceback" not in err and err.count("\n") == 1, err
    assert peak < 200, f"peak {peak:.0f} MiB"
    # A length field of 4 GiB in a small file: checked against what is left of the file.
    _, frames, _ = parse(bundle)
    at = next(f for f in frames if f.kind == b"S").offset
    data = bytearray(bundle)
    data[at : at + FRAME.size] = FRAME.pack(b"S", 2**32 - 1, 0)
    path.write_bytes(bytes(data))
    code, err, peak = child(tmp_path, "snapshot", "--from", str(path), "-f", "json")
    assert code == 0 and "Traceback" not in err and err.count("\n") == 1, err
    assert peak < 200, f"peak {peak:.0f} MiB"


def test_a_bundle_of_huge_journals_still_reads_back(tmp_path: Path) -> None:
    """The journals go in a bundle's header, which readers take only up to 16 MiB: the oldest
    records are left out, with one line, and the bundle reads back."""
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    rec_dir = tmp_path / "rec"
    rec_dir.mkdir(mode=0o700)
    write_small_recording(rec_dir / NAME, 70)
    line = '{"record": "intent", "run": "r", "sequence": %d, "note": "%s"}\n'
    with open(state / "changes.jsonl", "w") as fh:
        fh.writelines(line % (k, "x" * 200) for k in range(100_000))  # 24 MB
    os.chmod(state / "changes.jsonl", 0o600)
    out = tmp_path / "b.rec"
    code, err, _ = child(tmp_path, "bundle", "--dir", str(rec_dir), "--last", "1h", "-o", str(out))
    assert code == 0 and "left out their oldest" in err, err
    code, err, _ = child(tmp_path, "snapshot", "--from", str(out), "-f", "json")
    assert code == 0 and err == "", err
    journal = RecordingFile(out).header["journal"]
    assert journal[-1]["sequence"] == 99_999 and len(journal) > 50_000
