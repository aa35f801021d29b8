"""Crafted recordings of up to 1 MB are read or refused within 2 s and 256 MiB, through the
console script: ``snapshot --from``, ``bundle`` and ``replay`` (in tmux, ``q`` answered at
once), each with one-line messages and no traceback.

The files (tests/support/hostile_parts.py) are the kinds an attack campaign found: brackets
deeper than the limit followed by an unterminated string (quadratic to check: hours), streams
of millions of empty or tiny records (924 MB), a part of 177 MB spread over frames, a health
part of 100,000 devices (22 s a frame). Time is the property here: each is measured against
the same command on the uncrafted recording in the same run (so a busy host slows both), with
the ruling's 2 s on top; memory is the command's peak resident size.
"""

from __future__ import annotations

import signal
import subprocess
import time
from pathlib import Path

import pytest

from iotop_plus.record.format import record
from iotop_plus.record.reader import RecordingFile
from tests.support.hostile_parts import (
    CRAFTED,
    deflate_pieces,
    stream_records,
    with_stream,
    write_parts_recording,
)
from tests.support.measured import Measured, console_script, run_measured
from tests.support.tmux import TmuxSession, tmux_available

pytestmark = pytest.mark.slow  # the console script, and the TUI in tmux

NAME = "iotop-plus-000001-20231114-221330.rec"
MIB = 1 << 20
NAMED = ("deep-unterminated-header", "deep-unterminated-part", "empty-records", "tiny-records",
         "huge-part", "huge-health")  # fmt: skip
"""The crafted kinds the ruling names (``many-devices`` is a sample of 100,000 devices: its
cost is that of showing them, not of reading the file)."""


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> bytes:
    path = tmp_path_factory.mktemp("base") / NAME
    write_parts_recording(path, 60)
    return path.read_bytes()


def _one_line_each(m: Measured) -> None:
    assert "Traceback" not in m.stderr, m.stderr
    for line in m.stderr.splitlines():
        assert line.startswith("iotop-plus: "), m.stderr


def _within(crafted: Measured, control: Measured, what: str) -> None:
    assert crafted.peak_mib < 256, f"{what}: peak {crafted.peak_mib:.0f} MiB"
    bound = 3 * control.seconds + 2.0
    assert crafted.seconds < bound, (
        f"{what}: {crafted.seconds:.2f} s against {control.seconds:.2f} s for the uncrafted file"
    )


def _place(tmp: Path, name: str, data: bytes) -> Path:
    directory = tmp / name
    directory.mkdir(mode=0o700)
    path = directory / NAME
    path.write_bytes(data)
    return path


@pytest.mark.parametrize("kind", NAMED)
def test_a_crafted_file_is_read_or_refused_in_bounded_time_and_memory(
    tmp_path: Path, base: bytes, kind: str
) -> None:
    data = CRAFTED[kind](base)
    assert len(data) <= MIB
    crafted, plain = _place(tmp_path, "crafted", data), _place(tmp_path, "plain", base)
    for args in (("snapshot", "--from", "{}", "-f", "json"), ("snapshot", "--from", "{}")):
        control = run_measured(tmp_path, *(a.format(plain) for a in args))
        assert control.code == 0, control.stderr
        m = run_measured(tmp_path, *(a.format(crafted) for a in args))
        assert m.code in (0, 1), m.stderr
        _one_line_each(m)
        _within(m, control, f"{kind}: {args[0]}")
    for path in (plain, crafted):
        out = tmp_path / f"bundle-of-{path.parent.name}.rec"
        m = run_measured(
            tmp_path, "bundle", "--dir", str(path.parent), "--last", "1h", "-o", str(out)
        )
        if path is plain:
            control = m
            assert m.code == 0, m.stderr
            continue
        assert m.code in (0, 1), m.stderr
        _one_line_each(m)
        _within(m, control, f"{kind}: bundle")
        if m.code == 0:  # what a bundle of it holds reads back
            rec = RecordingFile(out)
            assert sum(len(rec.samples(i)) for i in range(len(rec.chunks))) > 0
            rec.close()


def _replay_quit_seconds(tmux: TmuxSession, path: Path, state: Path) -> float | None:
    """Replay ``path``, scrub it, press ``q``: seconds until it exited (None: it refused the
    file, with one line)."""
    launched = tmux.launch([console_script(), "--state-dir", str(state), "replay", str(path)])
    screen = tmux.wait_until(
        lambda s: "REPLAY at " in s or launched.rc_file.exists(), timeout=30, what="replay"
    )
    if "REPLAY at " not in screen:
        assert tmux.wait_exit(launched, timeout=5) == 1
        assert "Traceback" not in tmux.capture()
        return None
    tmux.send_keys("}", "]", "]", "{", "l")
    tmux.wait_for("REPLAY at ", timeout=10)
    t = time.monotonic()
    tmux.send_keys("q")
    assert tmux.wait_exit(launched, timeout=30) == 0
    took = time.monotonic() - t
    assert "Traceback" not in tmux.capture()
    return took


def test_replay_of_crafted_files_answers_q_at_once(tmp_path: Path, base: bytes) -> None:
    reason = tmux_available()
    if reason:
        pytest.skip(reason)
    plain = _place(tmp_path, "plain", base)
    with TmuxSession(120, 36) as tmux:
        control = _replay_quit_seconds(tmux, plain, tmp_path / "state")
        assert control is not None
        for kind in NAMED:
            crafted = _place(tmp_path, kind, CRAFTED[kind](base))
            took = _replay_quit_seconds(tmux, crafted, tmp_path / "state")
            assert took is None or took < 3 * control + 1.0, (kind, took, control)


def test_bundle_writes_a_part_holding_lone_surrogates_losslessly(
    tmp_path: Path, base: bytes
) -> None:
    """``"\\ud800"`` is valid JSON; a part holding it was read back and then crashed ``bundle``
    (UTF-8 cannot encode it). Written as ASCII JSON, it round-trips as it was."""
    odd = b'"\\ud800x\\udcff"'
    records = [(k, b.replace(b'"fio"', odd).replace(b'"dd"', odd)) for k, b in stream_records(base)]
    crafted = _place(
        tmp_path, "odd", with_stream(base, deflate_pieces(record(k, b) for k, b in records))
    )
    out = tmp_path / "b.rec"
    m = run_measured(
        tmp_path, "bundle", "--dir", str(crafted.parent), "--last", "1h", "-o", str(out)
    )
    assert m.code == 0 and "Traceback" not in m.stderr, m.stderr
    rec = RecordingFile(out)
    first = rec.samples(0)[0]
    assert first.parts["W"]["devices"]["sda"][0]["comm"] == "\ud800x\udcff"
    assert first.processes is not None and first.processes[0]["comm"] == "\ud800x\udcff"
    rec.close()
    m = run_measured(tmp_path, "snapshot", "--from", str(out), "-f", "json")
    assert m.code == 0 and "Traceback" not in m.stderr, m.stderr


def test_sigterm_and_ctrl_c_end_a_reading_command_at_once(tmp_path: Path, base: bytes) -> None:
    """``bundle`` of a directory of crafted files, stopped once it has begun reading them
    (its first warning): it ends within a second (3x headroom), with no traceback."""
    directory = tmp_path / "many"
    directory.mkdir(mode=0o700)
    for i, kind in enumerate(NAMED * 3):
        path = directory / f"iotop-plus-{i + 1:06d}-20231114-221330.rec"
        path.write_bytes(CRAFTED[kind](base))
    for signum, code in ((signal.SIGTERM, -signal.SIGTERM), (signal.SIGINT, 130)):
        proc = subprocess.Popen(
            [console_script(), "--state-dir", str(tmp_path / "state"), "bundle", "--dir",
             str(directory), "--last", "1h", "-o", str(tmp_path / f"b{signum}.rec")],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            assert proc.stderr is not None
            first = proc.stderr.readline()  # it is reading the files
            assert first.startswith("iotop-plus: warning: "), first
            proc.send_signal(signum)
            t = time.monotonic()
            assert proc.wait(timeout=30) in (code, 0, 1)
            took = time.monotonic() - t
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        err = proc.stderr.read()
        assert "Traceback" not in err, err
        assert took < 3.0, f"{signal.Signals(signum).name}: {took:.2f} s"
