"""A FIFO where the journal reads a file is one clear line, never a hang (#22 item 10).

``open()`` of a FIFO with no writer waits forever. The journal reads two kinds of file by
path: ``changes.jsonl`` in the state directory, and the identity files of a device (sysfs) or
of the boot (procfs), which a captured tree can replace with FIFOs. Each case runs in a child
process with a timeout, so a hang fails the test instead of stopping the suite.
"""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from iotop_plus.devices.journal import Journal
from iotop_plus.devices.settings import SettingError
from iotop_plus.devices.tuner import Tuner
from iotop_plus.devices.writers import write_tree_file
from iotop_plus.roots import Roots
from tests.unit.test_settings import make_tree

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def roots(tmp_path: Path) -> Roots:
    roots = make_tree(tmp_path / "tree")
    (roots.sys_block / "sda" / "dev").write_text("8:0\n")
    (roots.proc / "sys" / "kernel" / "random").mkdir(parents=True)
    os.mkfifo(roots.sys_block / "sda" / "diskseq")
    os.mkfifo(roots.proc / "sys" / "kernel" / "random" / "boot_id")
    return roots


_IDENTITY = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from iotop_plus.devices.changes import boot_id, device_identity
    from iotop_plus.roots import Roots
    tree = Path(sys.argv[1])
    roots = Roots(proc=tree / "proc", sys=tree / "sys")
    print(device_identity(roots, "sda")["diskseq"], boot_id(roots))
    """
)


def test_a_fifo_where_the_journal_reads_an_identity_is_none_not_a_hang(roots: Roots) -> None:
    child = subprocess.run(
        [sys.executable, "-c", _IDENTITY, str(roots.sys.parent)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert (child.returncode, child.stdout, child.stderr) == (0, "None None\n", "")


def test_a_fifo_journal_is_one_line_for_restore_not_a_hang(tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    os.mkfifo(state / "changes.jsonl", 0o600)
    run = subprocess.run(
        [sys.executable, "-m", "iotop_plus", "--state-dir", str(state), "restore", "--dry-run"],
        capture_output=True,
        text=True,
        cwd="/",
        env={**os.environ, "PYTHONPATH": str(REPO), "HOME": str(tmp_path)},
        timeout=30,
    )
    assert run.returncode == 1
    assert run.stderr == (
        f"iotop-plus: error: cannot read the journal: {state}/changes.jsonl is not a regular file\n"
    )


def test_a_fifo_journal_refuses_the_change(roots: Roots, tmp_path: Path) -> None:
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    os.mkfifo(state / "changes.jsonl", 0o600)
    tuner = Tuner(roots, Journal.in_dir(state), is_root=True, writer=write_tree_file)
    with pytest.raises(SettingError, match=r"changes\.jsonl is not a regular file"):
        tuner.apply("sda", "read_ahead_kb", "64")
    assert (roots.sys_block / "sda" / "queue" / "read_ahead_kb").read_text().strip() == "128"
