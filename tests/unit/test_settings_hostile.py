"""Queue settings read from a captured tree never hang: a FIFO as an attribute is a one-line
"cannot read", not a Device or Tune tab stuck in ``open()``."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

PROGRAM = """
import sys
from pathlib import Path
from iotop_plus.devices.settings import read_settings
from iotop_plus.roots import Roots
base = Path(sys.argv[1])
for value in read_settings(Roots(proc=base / "proc", sys=base / "sys"), "sda", is_root=True):
    print(value.setting.name, value.value, value.reason)
"""


def test_a_fifo_as_a_queue_attribute_is_cannot_read_not_a_hang(tmp_path: Path) -> None:
    queue = tmp_path / "sys" / "block" / "sda" / "queue"
    queue.mkdir(parents=True)
    (tmp_path / "sys" / "class" / "block").mkdir(parents=True)
    (tmp_path / "sys" / "class" / "block" / "sda").symlink_to("../../block/sda")
    (tmp_path / "proc").mkdir()
    os.mkfifo(queue / "read_ahead_kb")  # nobody ever writes: open() without O_NONBLOCK waits
    (queue / "scheduler").write_text("[none] mq-deadline\n")
    os.symlink("/dev/zero", queue / "nr_requests")  # endless
    run = subprocess.run(
        [sys.executable, "-c", PROGRAM, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=20,  # the old code hung here forever
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert run.returncode == 0, run.stderr
    lines = dict(line.split(" ", 1) for line in run.stdout.splitlines())
    assert "not a regular file (a FIFO)" in lines["read_ahead_kb"]
    assert "not a regular file (a character device)" in lines["nr_requests"]
    assert lines["scheduler"].startswith("none")


def test_a_kernel_thread_comm_with_escapes_reaches_top_s_table_as_question_marks(
    tmp_path: Path,
) -> None:
    from iotop_plus.commands.top import render_table
    from iotop_plus.sampling.processes.rates import rates_between
    from iotop_plus.sampling.processes.reader import ProcessReader
    from tests.unit.test_processes import FakeProc

    fake = FakeProc(tmp_path)
    # No cmdline (a kernel thread): top shows "[comm]", and any process may set its comm.
    fake.process(4242, comm="\x1b[31mRED\x07", cmdline="", read=0)
    reader = ProcessReader(fake.roots)
    prev = reader.sample()
    fake.process(4242, comm="\x1b[31mRED\x07", cmdline="", read=4096 * 100)
    cur = reader.sample()
    text = render_table(prev, cur, rates_between(prev, cur), show_all=True)
    assert "RED" in text
    assert "\x1b" not in text and "\x07" not in text
