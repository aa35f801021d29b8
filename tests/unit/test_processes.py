"""Per-process sampling on small /proc trees built in tmp_path: the parsing, the identity
of a process across samples (PID reuse, exec), the rates and totals, delay accounting."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from iotop_plus.commands import top
from iotop_plus.devices.delayacct import DelayAcctError, set_delayacct
from iotop_plus.devices.writers import write_tree_file
from iotop_plus.roots import Roots
from iotop_plus.sampling.processes.delayacct import OFF_EXPLANATION, DelayAcct, read_delayacct
from iotop_plus.sampling.processes.pid_files import IoCounters, parse_io, parse_stat
from iotop_plus.sampling.processes.rates import (
    Accumulator,
    ProcessSample,
    TaskCounters,
    rates_between,
    task_rates,
)
from iotop_plus.sampling.processes.reader import ProcessReader
from iotop_plus.sampling.topology.blockdev import parse_mountinfo_sources

IO_TEXT = (
    "rchar: {rchar}\nwchar: {wchar}\nsyscr: 10\nsyscw: 5\nread_bytes: {read}\n"
    "write_bytes: {write}\ncancelled_write_bytes: {cancelled}\n"
)


class FakeProc:
    """A /proc tree with the files the process reader uses (stat, io, cmdline, task/)."""

    def __init__(self, base: Path, delayacct: int | None = 0) -> None:
        self.proc = base / "proc"
        (self.proc / "sys" / "kernel").mkdir(parents=True)
        self.roots = Roots(proc=self.proc, sys=base / "sys")
        if delayacct is not None:
            (self.proc / "sys" / "kernel" / "task_delayacct").write_text(f"{delayacct}\n")
        self.uptime(100.0)

    def uptime(self, seconds: float) -> None:
        (self.proc / "uptime").write_text(f"{seconds:.2f} 50.00\n")

    def process(
        self,
        pid: int,
        *,
        comm: str = "worker",
        starttime: int = 100,
        cmdline: str = "worker --flag",
        read: int = 0,
        write: int = 0,
        cancelled: int = 0,
        rchar: int = 0,
        wchar: int = 0,
        threads: dict[int, int] | None = None,
        io_text: str | None = None,
    ) -> None:
        """Write (or overwrite) a process; ``threads`` maps TID -> delay ticks."""
        threads = threads if threads is not None else {pid: 0}
        d = self.proc / str(pid)
        (d / "task").mkdir(parents=True, exist_ok=True)
        for old in (d / "task").iterdir():
            if int(old.name) not in threads:
                for f in old.iterdir():
                    f.unlink()
                old.rmdir()
        main_ticks = threads.get(pid, 0)
        (d / "stat").write_text(stat_line(pid, comm, len(threads), starttime, main_ticks))
        for tid, ticks in threads.items():
            (d / "task" / str(tid)).mkdir(exist_ok=True)
            (d / "task" / str(tid) / "stat").write_text(
                stat_line(tid, comm, len(threads), starttime, ticks)
            )
        text = io_text or IO_TEXT.format(
            rchar=rchar, wchar=wchar, read=read, write=write, cancelled=cancelled
        )
        (d / "io").write_text(text)
        (d / "cmdline").write_bytes(cmdline.replace(" ", "\0").encode() + b"\0")

    def exit(self, pid: int) -> None:
        d = self.proc / str(pid)
        for path in sorted(d.rglob("*"), key=lambda p: -len(p.parts)):
            path.rmdir() if path.is_dir() else path.unlink()
        d.rmdir()


def stat_line(pid: int, comm: str, threads: int, starttime: int, ticks: int) -> str:
    rest = ["0"] * 50
    rest[0] = "S"
    rest[17] = str(threads)
    rest[19] = str(starttime)
    rest[39] = str(ticks)
    return f"{pid} ({comm}) {' '.join(rest)}\n"


def at(sample: ProcessSample, monotonic: float) -> ProcessSample:
    """The same sample, stamped at a chosen moment (rates need exact intervals here)."""
    return ProcessSample(
        monotonic,
        sample.wall_time,
        sample.uptime_ticks,
        sample.tasks,
        sample.delayacct,
        sample.per_thread,
        sample.unreadable,
        sample.problems,
    )


@pytest.fixture
def fake(tmp_path: Path) -> FakeProc:
    return FakeProc(tmp_path)


def by_pid(rates: dict, pid: int):
    found = [r for key, r in rates.items() if key[0] == pid]
    assert len(found) == 1, rates
    return found[0]


# -- parsing ------------------------------------------------------------------------------


def test_parse_io_reads_the_seven_counters() -> None:
    io_ = parse_io(IO_TEXT.format(rchar=1, wchar=2, read=4096, write=8192, cancelled=4096).encode())
    assert io_ == IoCounters(1, 2, 10, 5, 4096, 8192, 4096)
    assert io_.disk_write_bytes == 4096


@pytest.mark.parametrize("text", [b"", b"rchar: 1\n", b"rchar: x\nwchar: 2\n"])
def test_parse_io_rejects_bad_text_quoting_it(text: bytes) -> None:
    with pytest.raises(ValueError, match="not a /proc/PID/io"):
        parse_io(text)


def test_parse_stat_counts_fields_after_the_last_parenthesis() -> None:
    line = stat_line(42, "evil) S 1 (x", 3, 777, 9).encode()
    fields = parse_stat(line)
    assert (fields.pid, fields.comm, fields.state) == (42, "evil) S 1 (x", "S")
    assert (fields.num_threads, fields.starttime, fields.blkio_ticks) == (3, 777, 9)


def test_parse_stat_of_an_old_kernel_has_no_delay_ticks() -> None:
    rest = ["0"] * 30
    rest[17], rest[19] = "1", "5"
    assert parse_stat(f"1 (init) {' '.join(rest)}".encode()).blkio_ticks is None


@given(
    st.text(st.characters(blacklist_characters="\n\0", blacklist_categories=["Cs"]), max_size=15)
)
def test_parse_stat_accepts_any_comm(comm: str) -> None:
    assert parse_stat(stat_line(7, comm, 1, 11, 2).encode()).comm == comm


def test_parse_stat_rejects_garbage() -> None:
    with pytest.raises(ValueError, match="not a /proc/PID/stat"):
        parse_stat(b"hello world")


# -- the reader and the rates ---------------------------------------------------------------


def test_rates_are_bytes_per_second_with_writes_net_of_cancelled(fake: FakeProc) -> None:
    fake.process(10, read=0, write=0, rchar=0, wchar=0)
    reader = ProcessReader(fake.roots)
    first = at(reader.sample(), 0.0)
    fake.process(10, read=4096 * 100, write=8192 * 100, cancelled=4096 * 50, rchar=10**6)
    second = at(reader.sample(), 2.0)
    r = by_pid(rates_between(first, second), 10)
    assert r.read_bps == pytest.approx(4096 * 50)
    assert r.write_bps == pytest.approx((8192 - 2048) * 50)
    assert r.rchar_bps == pytest.approx(10**6 / 2)
    assert r.wchar_bps == 0
    assert r.io_wait_pct is None  # delay accounting is off in this tree
    assert r.active


def test_more_cancelled_than_written_is_zero_not_negative(fake: FakeProc) -> None:
    fake.process(10, write=8192, cancelled=0)
    reader = ProcessReader(fake.roots)
    first = at(reader.sample(), 0.0)
    fake.process(10, write=8192, cancelled=8192)  # a truncate cancelled the dirty pages
    r = by_pid(rates_between(first, at(reader.sample(), 1.0)), 10)
    assert r.write_bps == 0


def test_first_sight_of_an_old_process_has_no_rates(fake: FakeProc) -> None:
    reader = ProcessReader(fake.roots)
    first = at(reader.sample(), 0.0)
    # Started long before the first sample (starttime 100 ticks, uptime 100 s), but not
    # listed then: its lifetime counters must not become one interval's spike.
    fake.process(11, starttime=100, read=10**9)
    assert by_pid(rates_between(first, at(reader.sample(), 1.0)), 11) is None


def test_a_process_started_within_the_interval_is_rated_from_zero(fake: FakeProc) -> None:
    reader = ProcessReader(fake.roots)
    first = at(reader.sample(), 0.0)  # uptime 100.00 s = 10000 ticks
    fake.process(12, starttime=10_050, read=1_000_000)
    fake.uptime(101.0)
    r = by_pid(rates_between(first, at(reader.sample(), 1.0)), 12)
    assert r is not None and r.read_bps == pytest.approx(1_000_000)


def test_a_reused_pid_is_a_new_process_without_a_spike(fake: FakeProc) -> None:
    fake.process(13, comm="old", cmdline="old job", starttime=500, read=10)
    reader = ProcessReader(fake.roots)
    first = at(reader.sample(), 0.0)
    # The old process exited and an older-looking counter set appeared under its PID.
    fake.process(13, comm="new", cmdline="new job", starttime=600, read=5 * 10**9)
    second = at(reader.sample(), 1.0)
    rates = rates_between(first, second)
    assert list(rates) == [(13, 600)]
    assert rates[(13, 600)] is None
    assert second.tasks[(13, 600)].cmdline == "new job"


def test_exec_refreshes_the_command_line(fake: FakeProc) -> None:
    fake.process(14, comm="bash", cmdline="bash -c dd")
    reader = ProcessReader(fake.roots)
    reader.sample()
    fake.process(14, comm="dd", cmdline="dd if=/dev/zero of=x", write=4096)
    assert reader.sample().tasks[(14, 100)].name == "dd if=/dev/zero of=x"


def test_exited_and_vanishing_processes_are_not_errors(fake: FakeProc) -> None:
    fake.process(15)
    fake.process(16)
    reader = ProcessReader(fake.roots)
    first = reader.sample()
    fake.exit(15)
    (fake.proc / "16" / "io").unlink()  # vanished between listing and reading
    second = reader.sample()
    assert second.problems == ()
    assert (15, 100) not in second.tasks and (16, 100) not in second.tasks
    assert rates_between(first, second) == {}


def test_garbage_io_is_a_problem_line_and_the_rest_still_counts(fake: FakeProc) -> None:
    fake.process(17, io_text="this is not io\n")
    fake.process(18, read=4096)
    sample = ProcessReader(fake.roots).sample()
    assert len(sample.problems) == 1 and "17/io" in sample.problems[0]
    assert sample.tasks[(18, 100)].io is not None
    assert sample.tasks[(17, 100)].io is None


def test_kernel_threads_show_their_comm_in_brackets(fake: FakeProc) -> None:
    fake.process(2, comm="kthreadd", cmdline="")
    assert ProcessReader(fake.roots).sample().tasks[(2, 100)].name == "[kthreadd]"


def test_command_lines_lose_control_characters(fake: FakeProc) -> None:
    fake.process(19, cmdline="sh")
    (fake.proc / "19" / "cmdline").write_bytes(b"python\0-c\0print(1)\nx\x1b[2J\0")
    assert ProcessReader(fake.roots).sample().tasks[(19, 100)].cmdline == (
        "python -c print(1) x [2J"
    )


# -- IO% from the delay ticks ---------------------------------------------------------------


def test_io_wait_sums_the_threads_and_survives_a_thread_exit(tmp_path: Path) -> None:
    fake = FakeProc(tmp_path, delayacct=1)
    fake.process(20, threads={20: 0, 21: 0, 22: 500})
    reader = ProcessReader(fake.roots)
    first = at(reader.sample(), 0.0)
    assert first.tasks[(20, 100)].blkio_ticks == 500
    # 21 waited 30 ticks, 22 (with 500 old ticks) exited, 20 waited 20: 50 ticks in 1 s.
    fake.process(20, threads={20: 20, 21: 30})
    r = by_pid(rates_between(first, at(reader.sample(), 1.0)), 20)
    assert r.io_wait_pct == pytest.approx(50.0)
    assert r.active


def test_io_wait_is_capped_at_100_percent_per_thread(tmp_path: Path) -> None:
    fake = FakeProc(tmp_path, delayacct=1)
    fake.process(23, threads={23: 0})
    reader = ProcessReader(fake.roots)
    first = at(reader.sample(), 0.0)
    fake.process(23, threads={23: 103})  # read jitter: 1.03 s of waiting in 1 s
    assert by_pid(rates_between(first, at(reader.sample(), 1.0)), 23).io_wait_pct == 100.0


def test_delay_accounting_off_gives_none_not_zero(fake: FakeProc) -> None:
    fake.process(24, threads={24: 0})
    reader = ProcessReader(fake.roots)
    first = at(reader.sample(), 0.0)
    assert first.delayacct is DelayAcct.OFF
    assert first.tasks[(24, 100)].thread_ticks is None  # not even read
    assert by_pid(rates_between(first, at(reader.sample(), 1.0)), 24).io_wait_pct is None


def test_read_delayacct_states(tmp_path: Path) -> None:
    fake = FakeProc(tmp_path, delayacct=None)
    assert read_delayacct(fake.roots) is DelayAcct.UNKNOWN
    (fake.proc / "cmdline").write_text("root=/dev/vda nodelayacct quiet\n")
    assert read_delayacct(fake.roots) is DelayAcct.OFF
    sysctl = fake.proc / "sys" / "kernel" / "task_delayacct"
    sysctl.write_text("1\n")
    assert read_delayacct(fake.roots) is DelayAcct.ON
    sysctl.write_text("0\n")
    assert read_delayacct(fake.roots) is DelayAcct.OFF


def test_set_delayacct_writes_and_reads_back(fake: FakeProc) -> None:
    # A temporary tree is only written through an injected writer (#11: live trees only).
    assert set_delayacct(fake.roots, True, writer=write_tree_file) is DelayAcct.ON
    assert (fake.proc / "sys" / "kernel" / "task_delayacct").read_text() == "1\n"
    assert set_delayacct(fake.roots, False, writer=write_tree_file) is DelayAcct.OFF


def test_set_delayacct_without_the_sysctl_says_why(tmp_path: Path) -> None:
    fake = FakeProc(tmp_path, delayacct=None)
    with pytest.raises(DelayAcctError, match=r"predates 5\.14"):
        set_delayacct(fake.roots, True)


# -- totals, visibility message, per-thread rows --------------------------------------------


def test_totals_count_from_the_start_and_newcomers_from_zero(fake: FakeProc) -> None:
    fake.process(30, read=1000, write=0)
    reader = ProcessReader(fake.roots)
    acc = Accumulator()
    acc.update(reader.sample())
    fake.process(30, read=5000, write=3000, cancelled=1000)
    fake.process(31, starttime=10_050, read=700)  # started after the accumulation began
    fake.uptime(101.0)
    totals = acc.update(reader.sample())
    assert (totals[(30, 100)].read_bytes, totals[(30, 100)].write_bytes) == (4000, 2000)
    assert totals[(31, 10_050)].read_bytes == 700


def test_unreadable_message_names_the_fix() -> None:
    empty: dict = {}
    sample = ProcessSample(0.0, 0.0, None, empty, DelayAcct.OFF, unreadable=3)
    assert sample.unreadable_message == "3 processes not readable: run as root"
    one = ProcessSample(0.0, 0.0, None, empty, DelayAcct.OFF, unreadable=1)
    assert one.unreadable_message == "1 process not readable: run as root"
    root = ProcessSample(0.0, 0.0, None, empty, DelayAcct.OFF, unreadable=1, as_root=True)
    assert "denied by the kernel" in (root.unreadable_message or "")
    assert ProcessSample(0.0, 0.0, None, empty, DelayAcct.ON).unreadable_message is None


def test_per_thread_mode_gives_a_row_per_thread(tmp_path: Path) -> None:
    fake = FakeProc(tmp_path, delayacct=1)
    fake.process(40, threads={40: 1, 41: 2})
    for tid in (40, 41):
        (fake.proc / "40" / "task" / str(tid) / "io").write_text(
            IO_TEXT.format(rchar=tid, wchar=0, read=0, write=0, cancelled=0)
        )
    sample = ProcessReader(fake.roots, per_thread=True).sample()
    assert sorted(sample.tasks) == [(40, 100), (41, 100)]
    assert sample.tasks[(41, 100)].is_thread and sample.tasks[(41, 100)].pid == 40
    assert sample.tasks[(41, 100)].io is not None and sample.tasks[(41, 100)].io.rchar == 41


def test_detail_reads_the_threads_of_one_process(tmp_path: Path) -> None:
    fake = FakeProc(tmp_path, delayacct=1)
    fake.process(50, threads={50: 0, 51: 7})
    reader = ProcessReader(fake.roots)
    reader.detail_pid = 50
    sample = reader.sample()
    assert sample.detail_pid == 50
    assert sorted(t.tid for t in sample.detail.values()) == [50, 51]


def test_task_rates_with_no_interval_has_no_figures() -> None:
    task = TaskCounters(1, 1, 5, "x", "x", 0, "root", "S", 1, IoCounters(*[0] * 7), None)
    r = task_rates(task, task, 0.0)
    assert (r.read_bps, r.write_bps, r.io_wait_pct) == (None, None, None)


def test_mountinfo_sources_keep_fstype_source_and_super_options() -> None:
    text = (
        "27 1 254:0 / / rw,relatime - ext4 /dev/vda rw,discard\n"
        "40 27 0:45 / /var/lib/docker/x rw - overlay overlay rw,lowerdir=/l,upperdir=/u\n"
        "garbage\n"
    )
    mounts = parse_mountinfo_sources(text)
    assert mounts[(254, 0)].source == "/dev/vda"
    assert "upperdir=/u" in mounts[(0, 45)].super_options
    assert len(mounts) == 2


# -- iotop-plus top on a fixture tree -------------------------------------------------------


def run_top(roots: Roots, *argv: str) -> str:
    from iotop_plus.cli import build_parser

    args = build_parser().parse_args(["top", "--interval", "0.05", *argv])
    out = io.StringIO()
    assert top.run(args, roots, out) == 0
    return out.getvalue()


def test_top_json_leaves_idle_processes_out_unless_all(fake: FakeProc) -> None:
    fake.process(60, cmdline="busy writer", write=4096)
    fake.process(61, cmdline="idle sleeper")
    stats = json.loads(run_top(fake.roots, "--format", "json"))["statistics"][0]
    assert stats["delayacct"] == "off"
    assert OFF_EXPLANATION in stats["notes"]
    assert stats["processes"] == []  # the tree did not change between the two samples
    stats = json.loads(run_top(fake.roots, "--format", "json", "--all"))["statistics"][0]
    rows = {p["command"]: p for p in stats["processes"]}
    assert set(rows) == {"busy writer", "idle sleeper"}
    assert rows["busy writer"]["write_bps"] == 0.0
    assert rows["busy writer"]["io_wait_pct"] is None  # off: unknown, not zero


def test_top_table_says_io_is_off_instead_of_zeros(
    fake: FakeProc, capsys: pytest.CaptureFixture[str]
) -> None:
    fake.process(62, cmdline="sleeper")
    text = run_top(fake.roots, "--all")
    # Notes go to stderr (#22 item 12), once.
    assert capsys.readouterr().err == f"iotop-plus: note: {OFF_EXPLANATION}\n"
    assert "note:" not in text
    row = next(line for line in text.splitlines() if line.rstrip().endswith("sleeper"))
    assert " off " in row and "0.00 B/s" in row


counters = st.builds(
    IoCounters,
    *[st.integers(min_value=0, max_value=2**63) for _ in range(7)],
)
tick_sets = st.dictionaries(
    st.integers(min_value=1, max_value=50), st.integers(min_value=0, max_value=10**9)
)


@given(counters, counters, tick_sets, tick_sets, st.floats(min_value=0.01, max_value=100))
def test_rates_are_never_negative_whatever_the_counters_do(
    a: IoCounters, b: IoCounters, ticks_a: dict, ticks_b: dict, elapsed: float
) -> None:
    def task(io_: IoCounters, ticks: dict) -> TaskCounters:
        return TaskCounters(1, 1, 5, "x", "x", 0, "root", "S", 1, io_, tuple(ticks.items()))

    r = task_rates(task(a, ticks_a), task(b, ticks_b), elapsed)
    for value in (r.read_bps, r.write_bps, r.rchar_bps, r.wchar_bps, r.io_wait_pct):
        assert value is not None and value >= 0
    assert r.io_wait_pct is not None and r.io_wait_pct <= 100 * max(1, len(ticks_b))
