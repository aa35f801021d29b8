"""One reader of sysfs ``dev`` files (``MAJOR:MINOR``) for the samplers, the probe and tracers.

The probe's target check and the block tracer read ``/sys/class/block/NAME/dev`` with
``read_text()``, which waits forever on a FIFO in a captured tree; the sysfs stat reader
reported a bad ``dev`` as Python's ``invalid literal for int()``.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

from iotop_plus.probe.target import _sysfs_dev
from iotop_plus.roots import Roots
from iotop_plus.sampling.disks.diskstats import ParseProblem, read_sys_block_stats
from iotop_plus.sampling.topology.blockdev import read_dev_numbers

STAT = " ".join(["5"] * 17) + "\n"


def _tree(tmp_path: Path, name: str, dev: str | None) -> Roots:
    block = tmp_path / "sys" / "class" / "block" / name
    block.mkdir(parents=True)
    (block / "stat").write_text(STAT)
    if dev is None:
        os.mkfifo(block / "dev")
    else:
        (block / "dev").write_text(dev)
    (tmp_path / "proc").mkdir()
    return Roots(tmp_path / "proc", tmp_path / "sys")


def test_a_bad_dev_file_is_reported_by_name(tmp_path: Path) -> None:
    roots = _tree(tmp_path, "loop3", "7:x\n")
    problems: list[ParseProblem] = []
    assert read_sys_block_stats(roots.sys, ["loop3"], problems) == {}
    (problem,) = problems
    assert "not MAJOR:MINOR" in problem.reason and "loop3/dev" in problem.reason
    assert read_dev_numbers(roots, "loop3") is None


def test_a_fifo_as_dev_file_is_no_device_not_a_hang(tmp_path: Path) -> None:
    roots = _tree(tmp_path, "loop3", None)
    answers: list[object] = []

    def read() -> None:
        answers.append(read_dev_numbers(roots, "loop3"))
        answers.append(_sysfs_dev(roots, "loop3"))  # the probe's target check

    reader = threading.Thread(target=read)
    reader.daemon = True
    reader.start()
    reader.join(timeout=5)
    assert answers == [None, None]


def test_a_real_dev_file_gives_its_numbers(tmp_path: Path) -> None:
    roots = _tree(tmp_path, "loop3", "7:3\n")
    assert read_dev_numbers(roots, "loop3") == (7, 3)
    counters = read_sys_block_stats(roots.sys, ["loop3"])["loop3"]
    assert (counters.major, counters.minor) == (7, 3)
