"""Every per-process cache forgets the processes that are gone, and absurd counters are a
problem line for that process: 10,000 short-lived PIDs on a fixture tree, and the soak's
``top --format json`` that writes each interval as it ends instead of keeping them all."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pytest

from iotop_plus.commands import top
from iotop_plus.commands.json_stream import JsonStream
from iotop_plus.sampling.processes.pid_files import parse_io, parse_stat
from iotop_plus.sampling.processes.rates import Accumulator, rates_between
from iotop_plus.sampling.processes.reader import ProcessReader
from iotop_plus.sampling.topology.blockdev import BlockDeviceNames
from tests.unit.test_processes import IO_TEXT, FakeProc, at, run_top, stat_line


@pytest.fixture
def fake(mem_path: Path) -> FakeProc:
    return FakeProc(mem_path)


def open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


def short_process(fake: FakeProc, pid: int, uid: int | None) -> None:
    """The files the reader opens for one process (no task/ dir: delay accounting is off)."""
    d = fake.proc / str(pid)
    d.mkdir()
    (d / "stat").write_text(stat_line(pid, "dd", 1, 10_050, 0))
    (d / "io").write_text(IO_TEXT.format(rchar=4096, wchar=4096, read=0, write=4096, cancelled=0))
    (d / "cmdline").write_bytes(b"dd\0of=x\0")
    if uid is not None:
        os.chown(d, uid, -1)


def gone(fake: FakeProc, pid: int) -> None:
    d = fake.proc / str(pid)
    for name in ("stat", "io", "cmdline"):
        (d / name).unlink()
    d.rmdir()


@pytest.mark.slow  # seconds of CPU at scale: in make test, not in test-fast
def test_ten_thousand_short_lived_pids_leave_caches_and_fds_bounded(fake: FakeProc) -> None:
    """20 samples, each seeing 500 new PIDs (with their own uids, as in a user namespace
    range) while the previous 500 exit: what the reader, the totals and the held files keep
    follows the live processes, not every process ever seen."""
    as_root = os.geteuid() == 0
    fake.process(1, cmdline="init")  # one long-lived process
    reader = ProcessReader(fake.roots, hold_files=True)
    accumulator = Accumulator()
    baseline_fds = open_fds()
    batch, rounds = 500, 20
    live: list[int] = []
    biggest_known = biggest_base = biggest_users = 0
    for r in range(rounds):
        for pid in live:
            gone(fake, pid)
        live = list(range(1000 + r * batch, 1000 + (r + 1) * batch))
        for pid in live:
            short_process(fake, pid, 100_000 + pid if as_root else None)
        sample = reader.sample()
        assert len(sample.tasks) == batch + 1
        accumulator.update(sample)
        biggest_known = max(biggest_known, len(reader._known))
        biggest_base = max(biggest_base, len(accumulator._base))
        biggest_users = max(biggest_users, len(reader._users))
    assert biggest_known <= batch + 1
    assert biggest_base <= batch + 1  # was up to 2 * live + 1024
    if as_root:
        # Bounded by the uids in use (plus a fixed allowance), not by every uid ever seen.
        assert biggest_users <= 1024 + batch + 1, biggest_users
    # The held /proc files are those of the live processes only.
    assert open_fds() - baseline_fds <= batch + 1
    for pid in live:
        gone(fake, pid)
    reader.sample()
    assert len(reader._known) == 1
    assert open_fds() - baseline_fds <= 1
    reader.close()
    assert open_fds() == baseline_fds


def test_block_device_names_stay_bounded(tmp_path: Path) -> None:
    names = BlockDeviceNames(FakeProc(tmp_path).roots)
    for minor in range(10_000):
        names.name(0, minor)  # anonymous st_devs: a new tmpfs or overlay each time
    assert len(names._names) <= 4096


# -- absurd counters ------------------------------------------------------------------------

ABSURD = [
    str(2**64),  # one past u64
    "-4096",
    "4096.5",
    "9" * 400,
    "+4096",
    "4_096",
    "0x1000",
    "٤٠٩٦",  # Arabic-Indic digits: int() takes them from str
]


@pytest.mark.parametrize("value", ABSURD)
def test_parse_io_rejects_counters_that_are_no_u64(value: str) -> None:
    text = IO_TEXT.format(rchar=1, wchar=2, read=value, write=0, cancelled=0).encode()
    with pytest.raises(ValueError, match="not a /proc/PID/io"):
        parse_io(text)


@pytest.mark.parametrize("value", ABSURD)
def test_parse_stat_rejects_fields_that_are_no_u64(value: str) -> None:
    line = stat_line(7, "x", 1, 100, 0).replace(" 100 ", f" {value} ", 1)
    with pytest.raises(ValueError, match="not a /proc/PID/stat"):
        parse_stat(line.encode())


@pytest.mark.parametrize("value", ABSURD)
def test_absurd_io_counters_are_malformed_for_that_process_only(fake: FakeProc, value: str) -> None:
    fake.process(20, read=4096, write=4096)
    fake.process(21, read=0)
    reader = ProcessReader(fake.roots)
    first = at(reader.sample(), 0.0)
    fake.process(20, io_text=IO_TEXT.format(rchar=0, wchar=0, read=value, write=8192, cancelled=0))
    fake.process(21, read=8192)
    second = at(reader.sample(), 1.0)
    assert len(second.problems) == 1 and "20/io" in second.problems[0], second.problems
    assert second.tasks[(20, 100)].io is None
    assert second.unreadable == 0  # malformed is not "run as root"
    rates = rates_between(first, second)
    bad = rates[(20, 100)]
    assert bad is not None
    assert (bad.read_bps, bad.write_bps, bad.rchar_bps, bad.wchar_bps) == (None,) * 4
    good = rates[(21, 100)]
    assert good is not None and good.read_bps == pytest.approx(8192)
    # top prints the process with unknown figures, never a traceback.
    out = run_top(fake.roots, "--all", "--format", "json")
    assert json.loads(out)["statistics"][0]["unreadable"] == 0


@pytest.mark.parametrize(
    "field, bad",
    [(39, "x"), (39, "-1"), (0, "\xff"), (39, "9" * 30)],
    ids=["ticks-word", "ticks-negative", "state-not-ascii", "ticks-over-u64"],
)
def test_garbage_in_a_held_stat_file_is_a_problem_line_not_a_crash(
    tmp_path: Path, field: int, bad: str
) -> None:
    """With delay accounting on, an idle process is checked through its held stat file."""
    fake = FakeProc(tmp_path, delayacct=1)
    fake.process(30, threads={30: 5})
    reader = ProcessReader(fake.roots, hold_files=True)
    reader.sample()
    rest = ["0"] * 50
    rest[0], rest[17], rest[19], rest[39] = "S", "1", "100", "5"
    rest[field] = bad
    # Rewritten in place: the held file sees the new text.
    (fake.proc / "30" / "stat").write_bytes(f"30 (worker) {' '.join(rest)}\n".encode("latin-1"))
    sample = reader.sample()
    if field == 0:
        assert sample.tasks[(30, 100)].state == "\ufffd"
    else:
        assert (30, 100) not in sample.tasks
        assert any("30/stat" in p for p in sample.problems), sample.problems
    reader.close()


# -- top --format json streams ---------------------------------------------------------------


def test_top_json_writes_each_interval_as_it_ends(
    fake: FakeProc, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long ``--count`` must not keep every interval in memory until the end."""
    fake.process(40, cmdline="writer", write=0)
    out = io.StringIO()
    written_at_sample: list[int] = []
    real_sample = ProcessReader.sample

    def sample(self: ProcessReader):
        written_at_sample.append(out.getvalue().count('"timestamp"'))
        return real_sample(self)

    monkeypatch.setattr(ProcessReader, "sample", sample)
    from iotop_plus.cli import build_parser

    args = build_parser().parse_args(
        ["top", "--interval", "0.01", "--count", "4", "--format", "json", "--all"]
    )
    assert top.run(args, fake.roots, out) == 0
    # Sample k+2 starts after interval k was written.
    assert written_at_sample == [0, 0, 1, 2, 3]
    doc = json.loads(out.getvalue())
    assert len(doc["statistics"]) == 4
    assert doc["statistics"][0]["processes"][0]["command"] == "writer"


@pytest.mark.parametrize("count", [0, 1, 3])
def test_json_stream_is_what_json_dump_writes(count: int) -> None:
    doc = {"tool": "iotop-plus", "host": 'h"\n', "statistics": []}
    stats = [
        {"timestamp": str(i), "processes": [{"pid": i, "x": None}], "e": []} for i in range(count)
    ]
    out = io.StringIO()
    stream = JsonStream(doc, out)
    for s in stats:
        stream.add(s)
    stream.close()
    stream.close()
    # Strings go through printable: the host's newline is written \x0a (no control character).
    shown = {**doc, "host": 'h"\\x0a', "statistics": stats}
    assert out.getvalue() == json.dumps(shown, indent=2) + "\n"
