"""A reaped child's lifetime I/O lands in its parent's counters at once: the parent must not
show it as a spike ("DISK READ spikes to 2.4 GB/s when a child exits")."""

from __future__ import annotations

from pathlib import Path

from iotop_plus.sampling.processes.rates import ProcessSample, rates_between
from iotop_plus.sampling.processes.reader import ProcessReader
from tests.unit.test_processes import FakeProc, at

GB = 1 << 30


def set_ppid(fake: FakeProc, pid: int, ppid: int) -> None:
    stat = fake.proc / str(pid) / "stat"
    head, rest = stat.read_text().rsplit(") ", 1)
    fields = rest.split()
    fields[1] = str(ppid)  # field 4
    stat.write_text(f"{head}) {' '.join(fields)}\n")


def sample(reader: ProcessReader, t: float) -> ProcessSample:
    return at(reader.sample(), t)


def test_a_reaped_child_does_not_make_its_parent_spike(tmp_path: Path) -> None:
    fake = FakeProc(tmp_path)
    fake.process(100, comm="make", read=0)
    fake.process(200, comm="cc1", read=GB)
    set_ppid(fake, 200, 100)
    reader = ProcessReader(fake.roots)
    a = sample(reader, 1000.0)
    fake.process(200, comm="cc1", read=GB + 4096)
    set_ppid(fake, 200, 100)
    b = sample(reader, 1001.0)
    child = rates_between(a, b)[(200, 100)]
    assert child is not None and child.read_bps == 4096
    # The child read 4096 more bytes, exited and was reaped: the kernel adds its whole
    # lifetime (1 GiB + 8 KiB) to the parent's counters.
    fake.exit(200)
    fake.process(100, comm="make", read=GB + 8192)
    c = sample(reader, 1002.0)
    parent = rates_between(b, c)[(100, 100)]
    assert parent is not None
    assert parent.read_bps == 4096  # what the child did in this interval, not 1 GiB/s


def test_a_child_and_grandchild_gone_in_one_interval_do_not_make_the_grandparent_spike(
    tmp_path: Path,
) -> None:
    """bash runs fio, fio's job process does the I/O: the job exits and fio reaps it, then
    fio exits and bash reaps it, all within one interval. bash gets both lifetimes at once
    (ci33 saw a shell at 25 GB/s); what was already shown as theirs comes back out."""
    fake = FakeProc(tmp_path)
    fake.process(100, comm="bash", write=0)
    fake.process(200, comm="fio", write=0)
    fake.process(300, comm="fio", write=2 * GB)
    set_ppid(fake, 200, 100)
    set_ppid(fake, 300, 200)
    reader = ProcessReader(fake.roots)
    a = sample(reader, 1000.0)
    fake.exit(300)
    fake.exit(200)
    fake.process(100, comm="bash", write=2 * GB + 8192)
    b = sample(reader, 1001.0)
    shell = rates_between(a, b)[(100, 100)]
    assert shell is not None
    assert shell.write_bps == 8192
