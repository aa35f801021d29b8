"""A traced probe says who else used its device, and keeps flush+writes apart (#22 item 11).

Before, a traced ``wal`` probe got no other-I/O note at all (nothing filled the issuers), and
its device-side write latency mixed fio's data writes with the empty preflush write of every
fsync (timed with the flush's own stamp) and a filesystem's journal commits. Now the block
tracer counts the device's requests by issuer, so a second process doing I/O on the device
during the probe is named (``dd[PID]``), fio and the filesystem's journal thread are not, and
writes carrying a preflush or FUA are timed apart as ``flush+write``.
"""

from __future__ import annotations

import io
import json
import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from rich.console import Console
from rich.table import Table

from iotop_plus.probe.history import ProbeHistory, compare
from iotop_plus.tui.widgets.probe_cards import result_card
from tests.e2e.test_latency_real import need_tracer
from tests.support.mounts import unmount

pytestmark = [pytest.mark.slow, pytest.mark.root]

RUNTIME_S = 4


@contextmanager
def _ext4(dev: str, mnt: Path) -> Iterator[Path]:
    """ext4 on ``dev``, initialised in full (no lazy-init thread reading meanwhile)."""
    subprocess.run(
        ["mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", f"/dev/{dev}"],
        check=True, capture_output=True,
    )  # fmt: skip
    mnt.mkdir()
    subprocess.run(["mount", f"/dev/{dev}", str(mnt)], check=True, capture_output=True)
    try:
        yield mnt
    finally:
        unmount(mnt)


def _probe_cli(state: Path, target: str, *extra: str, fmt: str = "json") -> list[str]:
    return [
        sys.executable, "-m", "iotop_plus", "--state-dir", str(state), "probe", "wal",
        "-t", target, "-r", str(RUNTIME_S), "--format", fmt, "--trace", *extra,
    ]  # fmt: skip


def _probe(argv: list[str], other_io: list[str] | None = None) -> tuple[str, str]:
    """Run the CLI probe; once fio reports progress, start ``other_io`` until it ends."""
    probe = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    other: subprocess.Popen[bytes] | None = None
    try:
        assert probe.stderr is not None
        seen = []
        for line in probe.stderr:
            seen.append(line)
            if re.match(rf"\s+\d+/{RUNTIME_S} s\s", line):  # fio is writing
                break
        else:
            raise AssertionError(f"the probe never reported progress: {''.join(seen)!r}")
        if other_io is not None:
            other = subprocess.Popen(other_io, start_new_session=True)
        out, err = probe.communicate(timeout=120)
    finally:
        if other is not None:  # the shell and its dd: nothing may keep the mount busy
            os.killpg(other.pid, signal.SIGKILL)
            other.wait()
        probe.kill()
        probe.wait()
    assert probe.returncode == 0, "".join(seen) + err
    return out, "".join(seen) + err


def _reader(path: str) -> list[str]:
    """Someone else's reader: direct 4k reads, over and over, named dd."""
    return [
        "sh", "-c",
        f"while :; do dd if={path} of=/dev/null bs=4k count=1000 iflag=direct status=none; done",
    ]  # fmt: skip


def _card(table: Table) -> str:
    console = Console(width=160, record=True, file=io.StringIO())
    console.print(table)
    return console.export_text()


def _other_io(doc: dict) -> str | None:
    return next((h["text"] for h in doc["hints"] if h["code"] == "other-io"), None)


@pytest.fixture
def tracer() -> None:
    need_tracer()


def test_a_traced_wal_probe_on_an_idle_raw_device_reports_flush_writes_apart_and_no_other_io(
    tmp_path: Path, make_loop: Callable[..., str], fio_bin: str, tracer: None
) -> None:
    dev = make_loop(size_mb=64)
    out, _ = _probe(_probe_cli(tmp_path / "state", f"/dev/{dev}", "--confirm", dev))
    doc = json.loads(out)
    fio_writes = doc["write"]["total_ios"]
    # Each fsync is one empty preflush write, timed from submission to the end of its flush.
    assert doc["flush_write"] is not None
    assert 0.9 * fio_writes <= doc["flush_write"]["count"] <= 1.1 * fio_writes
    # The plain writes are fio's data writes alone, no longer twice as many.
    assert doc["write"]["block"]["count"] <= 1.1 * fio_writes
    issuers = doc["issuers"]
    assert issuers["fio"] >= 1.8 * fio_writes  # its writes and its fsyncs' empty writes
    assert issuers["others"] == [] and issuers["journal"] == 0
    assert _other_io(doc) is None
    # The Probe tab's card, from the result as the history kept it, has its own line.
    kept = ProbeHistory.load(tmp_path / "state").records[-1].result
    assert kept.flush_write is not None and kept.issuers is not None
    card = _card(result_card(kept))
    history = ProbeHistory.load(tmp_path / "state").records
    assert "flush+write p99 µs" in [row.label for row in compare(history[-1], history[-1])]
    line = r"^flush\+write µs +p50 [\d,]+ p99 [\d,]+ .*max [\d,]+ \([\d,]+ requests\)"
    assert re.search(line, card, re.M), card


def test_a_traced_wal_probe_on_an_idle_ext4_names_neither_fio_nor_the_journal(
    tmp_path: Path, make_loop: Callable[..., str], fio_bin: str, tracer: None
) -> None:
    dev = make_loop(size_mb=128)
    with _ext4(dev, tmp_path / "mnt") as mnt:
        out, _ = _probe(_probe_cli(tmp_path / "state", str(mnt), "-s", "size=32"))
        table, _ = _probe(_probe_cli(tmp_path / "state", str(mnt), "-s", "size=32", fmt="table"))
    doc = json.loads(out)
    fio_writes = doc["write"]["total_ios"]
    issuers = doc["issuers"]
    # The fsyncs made the journal thread commit (not every one: an fsync with no inode change
    # to log sends only a flush, from fio): those commits are the probe's own.
    assert issuers["journal"] > 0
    assert issuers["fio"] >= fio_writes
    assert sum(n for _, n in issuers["others"]) <= 0.1 * fio_writes
    assert _other_io(doc) is None
    # Each fsync is a commit (preflush + FUA) or fio's own empty preflush write.
    assert doc["flush_write"]["count"] >= 0.9 * fio_writes
    assert re.search(r"^  flush\+write device µs: mean [\d.,]+  p50 ", table, re.M), table


def test_a_second_process_reading_the_raw_device_during_a_wal_probe_is_named(
    tmp_path: Path, make_loop: Callable[..., str], fio_bin: str, tracer: None
) -> None:
    dev = make_loop(size_mb=64)
    out, _ = _probe(
        _probe_cli(tmp_path / "state", f"/dev/{dev}", "--confirm", dev),
        other_io=_reader(f"/dev/{dev}"),
    )
    doc = json.loads(out)
    named = [name for name, _ in doc["issuers"]["others"]]
    assert named and all(re.fullmatch(r"(dd|sh)\[\d+\]", name) for name in named), named
    text = _other_io(doc)
    assert text is not None and "requests from dd[" in text, doc["hints"]
    assert "fio[" not in text


def test_a_second_process_on_the_same_ext4_during_a_wal_probe_is_named_not_the_journal(
    tmp_path: Path, make_loop: Callable[..., str], fio_bin: str, tracer: None
) -> None:
    dev = make_loop(size_mb=128)
    with _ext4(dev, tmp_path / "mnt") as mnt:
        other = mnt / "someone-elses-file"
        subprocess.run(
            ["dd", "if=/dev/zero", f"of={other}", "bs=1M", "count=8", "conv=fsync", "status=none"],
            check=True,
        )  # fmt: skip
        out, _ = _probe(
            _probe_cli(tmp_path / "state", str(mnt), "-s", "size=32"),
            other_io=_reader(str(other)),
        )
    doc = json.loads(out)
    text = _other_io(doc)
    assert text is not None and "requests from dd[" in text, doc["hints"]
    assert "jbd2" not in text and "fio[" not in text
    assert doc["issuers"]["journal"] > 0


def test_a_traced_sweep_while_another_reader_hits_the_device_names_the_reader(
    tmp_path: Path, make_loop: Callable[..., str], fio_bin: str, tracer: None
) -> None:
    dev = make_loop(size_mb=64)
    reader = subprocess.Popen(_reader(f"/dev/{dev}"), start_new_session=True)
    try:
        done = subprocess.run(
            [sys.executable, "-m", "iotop_plus", "--state-dir", str(tmp_path / "state"), "sweep",
             "--target", f"/dev/{dev}", "--max-qd", "1", "--step-runtime", "2", "--quiet",
             "--trace"],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
    finally:
        os.killpg(reader.pid, signal.SIGKILL)
        reader.wait()
    assert done.returncode == 0, done.stderr
    line = next((x for x in done.stdout.splitlines() if x.startswith("other I/O hit")), "")
    assert line.startswith("other I/O hit the device during QD 1: "), done.stdout
    assert "requests from dd[" in line and "it served" not in line, line
