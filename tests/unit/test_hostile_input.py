"""Hostile input to the headless commands: FIFOs and endless files as diskstats, absurd
counters, names too long for the kernel, device names with terminal escapes, and a stdout
that cannot be written. Each one is one clear line on stderr, never a traceback or a hang.

The commands run in a subprocess with a timeout, so a regression to a hang fails the test
instead of hanging the suite.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.disks import sampler
from iotop_plus.sampling.disks.diskstats import ParseProblem, parse_diskstats, parse_sys_stat
from iotop_plus.sysfs import MAX_SOURCE_BYTES
from tests.support.cli import run_cli

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "tests" / "fixtures"
LINE = "   8       0 sda 100 0 800 10 50 0 400 5 0 20 15 0 0 0 0 0 0"


def iotop_plus(*args: str, timeout: float = 20.0) -> subprocess.CompletedProcess[str]:
    return run_cli(*args, timeout=timeout)


def one_line(stderr: str) -> str:
    """The single stderr line, asserting there is no traceback and nothing else."""
    assert "Traceback" not in stderr, stderr
    # snapshot's "N devices hidden (...)" count is a note of its own (rulings), not an error.
    lines = [line for line in stderr.strip().splitlines() if " hidden (" not in line]
    assert len(lines) == 1, stderr
    return lines[0]


def tree(tmp_path: Path, text: str | None = LINE + "\n") -> Path:
    """A minimal captured host: proc/diskstats (unless None) and an empty sys/."""
    (tmp_path / "proc").mkdir(parents=True)
    (tmp_path / "sys" / "class" / "block").mkdir(parents=True)
    if text is not None:
        (tmp_path / "proc" / "diskstats").write_text(text)
    return tmp_path


def roots_args(base: Path) -> list[str]:
    return ["--proc-root", str(base / "proc"), "--sys-root", str(base / "sys")]


# ---- FIFOs and endless files (item 11) ------------------------------------------------------


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "char-device"])
def test_a_special_file_as_diskstats_is_one_error_within_a_second(
    tmp_path: Path, kind: str
) -> None:
    base = tree(tmp_path / "special", None)
    target = base / "proc" / "diskstats"
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "dev-zero":
        target.symlink_to("/dev/zero")
    else:
        if os.geteuid() != 0:
            pytest.skip("making a device node needs root")
        os.mknod(target, 0o600 | 0o020000, os.makedev(1, 5))  # /dev/zero's numbers
    started = time.monotonic()
    run = iotop_plus(*roots_args(base), "snapshot", "-i", "0.01", timeout=10)
    took = time.monotonic() - started
    line = one_line(run.stderr)
    assert run.returncode == 1, run.stderr
    assert str(target) in line and "not a regular file" in line
    # The control: the same snapshot of a regular diskstats, in the same run (Python's own
    # start-up is most of either, and a busy host stretches both). A fifo never written
    # blocks its reader, /dev/zero never ends: either would run into the 10 s timeout.
    control_base = tree(tmp_path / "control")
    started = time.monotonic()
    control = iotop_plus(*roots_args(control_base), "snapshot", "-i", "0.01", timeout=10)
    control_took = time.monotonic() - started
    assert control.returncode == 0, control.stderr
    assert took < 2 * control_took + 1.0, f"took {took:.1f} s, the control {control_took:.1f} s"


def test_a_source_larger_than_the_cap_is_refused_not_read_to_the_end(tmp_path: Path) -> None:
    base = tree(tmp_path)
    path = base / "proc" / "diskstats"
    with open(path, "ab") as fh:
        fh.truncate(MAX_SOURCE_BYTES + 1)  # sparse: costs no disk
    with pytest.raises(sampler.SourceError, match="larger than"):
        sampler.Sampler(Roots(base / "proc", base / "sys")).sample()


def run_python(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    """``code`` in a fresh interpreter, with a timeout so a hang fails the test."""
    return subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        timeout=10,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )


def test_sysfs_stat_files_that_are_fifos_are_skipped_and_reported(tmp_path: Path) -> None:
    code = (
        "import sys; from pathlib import Path\n"
        "from iotop_plus.sampling.disks.diskstats import read_sys_block_stats\n"
        "problems = []\n"
        "print(read_sys_block_stats(Path(sys.argv[1]), ['sdz', 'sdy'], problems))\n"
        "print(*problems, sep='\\n')\n"
    )
    for name, special in (("sdz", "fifo"), ("sdy", "zero")):
        block = tmp_path / "block" / name
        block.mkdir(parents=True)
        (block / "dev").write_text("8:0\n")
        if special == "fifo":
            os.mkfifo(block / "stat")
        else:
            (block / "stat").symlink_to("/dev/zero")
    run = run_python(code, str(tmp_path))
    assert run.returncode == 0, run.stderr
    lines = run.stdout.splitlines()
    assert lines[0] == "{}"
    assert len(lines) == 3 and all("not a regular file" in line for line in lines[1:])


def test_inventory_attributes_that_are_fifos_do_not_hang(tmp_path: Path) -> None:
    code = (
        "import sys; from pathlib import Path; from iotop_plus.roots import Roots\n"
        "from iotop_plus.sampling.topology.inventory import read_inventory\n"
        "base = Path(sys.argv[1])\n"
        "inv = read_inventory(Roots(base / 'proc', base / 'sys'), use_udev=False)\n"
        "print(sorted(inv.devices), inv.devices['sdz'].model)\n"
    )
    disk = tmp_path / "sys" / "block" / "sdz"
    (disk / "device").mkdir(parents=True)
    (tmp_path / "proc").mkdir()
    (disk / "dev").write_text("8:0\n")
    for attr in ("size", "ro"):
        os.mkfifo(disk / attr)
    os.mkfifo(disk / "device" / "model")
    os.symlink("/dev/zero", disk / "device" / "vendor")
    os.mkfifo(tmp_path / "proc" / "swaps")
    run = run_python(code, str(tmp_path))
    assert run.returncode == 0, run.stderr
    assert run.stdout.strip() == "['sdz'] None"


def test_a_missing_diskstats_falls_back_to_sysfs_and_says_so(tmp_path: Path) -> None:
    base = tree(tmp_path, None)
    disk = base / "sys" / "block" / "sdz"
    disk.mkdir(parents=True)
    (disk / "dev").write_text("8:0\n")
    (disk / "stat").write_text("100 0 800 10 50 0 400 5 0 20 15\n")
    run = iotop_plus(*roots_args(base), "snapshot", "-i", "0.01")
    assert run.returncode == 0, run.stderr
    line = one_line(run.stderr)
    assert "diskstats" in line and "sys/block/*/stat" in line
    assert "sdz" in run.stdout


# ---- absurd counters ------------------------------------------------------------------------


def test_a_counter_above_two_to_the_64_is_malformed_like_a_negative_one() -> None:
    huge = "9" * 400
    text = f"{LINE}\n   8      16 sdb 1 0 {huge} 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n"
    problems: list[ParseProblem] = []
    counters = parse_diskstats(text, problems=problems)
    assert list(counters) == ["sda"]
    assert "counter above 2^64" in problems[0].reason
    # One line at 2^64 exactly is malformed too; 2^64 - 1 is the largest a u64 prints.
    problems.clear()
    ok = parse_diskstats(f"   8 16 sdb {2**64 - 1} " + "0 " * 10, problems=problems)
    assert ok and not problems
    parse_diskstats(f"   8 16 sdb {2**64} " + "0 " * 10, problems=problems)
    assert problems
    with pytest.raises(ValueError, match="2\\^64"):
        parse_sys_stat(f"{huge} 0 0 0 0 0 0 0 0 0 0", "sdb")


def test_snapshot_with_a_400_digit_counter_reports_the_line_and_goes_on(tmp_path: Path) -> None:
    huge = "9" * 400
    base = tree(tmp_path, f"{LINE}\n   8      16 sdb 1 0 {huge} 0 0 0 0 0 0 0 0 0 0 0 0 0 0\n")
    run = iotop_plus(*roots_args(base), "snapshot", "-i", "0.01", "-a")
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert "counter above 2^64" in run.stderr
    assert "sda" in run.stdout and "sdb" not in run.stdout


# ---- names the kernel cannot take -----------------------------------------------------------


@pytest.mark.parametrize("where", ["proc-root", "sys-root", "device", "set-device"])
def test_a_100000_character_name_is_one_line_and_exit_2(tmp_path: Path, where: str) -> None:
    long = "a" * 100_000
    base = tree(tmp_path)
    if where == "proc-root":
        argv = ["--proc-root", f"/tmp/{long}", "snapshot"]
    elif where == "sys-root":
        argv = ["--sys-root", f"/tmp/{long}", "snapshot"]
    elif where == "device":
        argv = [*roots_args(base), "snapshot", "-i", "0.01", long]
    else:
        argv = ["set", long, "read_ahead_kb=16", "--dry-run"]
    run = iotop_plus(*argv)
    line = one_line(run.stderr)
    assert run.returncode == 2, run.stderr
    assert len(line) < 400, "the name is cut, not echoed in full"


# ---- control characters in names ------------------------------------------------------------


def _escape_tree(tmp_path: Path) -> Path:
    evil = "\x1b[31mRED\x07"
    base = tree(tmp_path, f"{LINE.replace('sda', evil)}\n")
    (base / "proc" / "sys" / "kernel").mkdir(parents=True)
    (base / "proc" / "sys" / "kernel" / "hostname").write_text("host\x1b]0;pwned\x07\n")
    return base


@pytest.mark.parametrize("fmt", ["table", "csv"])
def test_snapshot_output_never_carries_terminal_escapes(tmp_path: Path, fmt: str) -> None:
    base = _escape_tree(tmp_path)
    run = iotop_plus(*roots_args(base), "snapshot", "-i", "0.01", "-a", "-f", fmt)
    assert run.returncode == 0, run.stderr
    assert "\x1b" not in run.stdout and "\x07" not in run.stdout
    assert "\\x1b[31mRED\\x07" in run.stdout


# ---- a stdout that cannot be written --------------------------------------------------------


def _to_dev_full(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    with open("/dev/full", "w") as full:
        return subprocess.run(
            [sys.executable, "-m", "iotop_plus", *argv],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
            cwd="/",
            timeout=60,
        )


@pytest.mark.parametrize("fmt", ["table", "json", "csv"])
def test_snapshot_to_a_full_stdout_is_one_line_exit_1(fmt: str) -> None:
    tree_args = roots_args(FIXTURES / "tui_host")
    run = _to_dev_full(*tree_args, "snapshot", "-i", "0.01", "-f", fmt)
    # Notes on what the tree lacks (memory figures...) are stderr lines of their own.
    errors = "".join(line for line in run.stderr.splitlines(True) if " note: " not in line)
    assert one_line(errors) == "iotop-plus: error: cannot write output: No space left on device"
    assert run.returncode == 1


def test_top_to_a_full_stdout_is_one_line_exit_1() -> None:
    run = _to_dev_full("top", "-i", "0.05")
    # top's notes (delay accounting off...) are stderr lines of their own (#22 item 12).
    errors = "".join(line for line in run.stderr.splitlines(True) if " note: " not in line)
    assert one_line(errors) == "iotop-plus: error: cannot write output: No space left on device"
    assert run.returncode == 1


@pytest.mark.root
def test_set_to_a_full_stdout_applies_then_says_it_could_not_print(
    make_loop: Callable[..., str], tmp_path: Path
) -> None:
    if shutil.which("losetup") is None or os.geteuid() != 0:
        pytest.skip("needs root and losetup")
    from tests.support.queue_guard import queue_values, restored_queue

    name = make_loop(16)
    with restored_queue(name):
        before = queue_values(name)["read_ahead_kb"]
        wanted = "12" if before != "12" else "24"
        state = tmp_path / "state"  # never root's real /var/lib/iotop-plus
        run = _to_dev_full("--state-dir", str(state), "set", name, f"read_ahead_kb={wanted}")
        assert queue_values(name)["read_ahead_kb"] == wanted  # the change was made
        err = run.stderr.strip().splitlines()
        assert "Traceback" not in run.stderr
        assert err[-1] == "iotop-plus: error: cannot write output: No space left on device"
        assert run.returncode == 1


def test_set_dry_run_to_a_full_stdout_is_one_line_exit_1(make_loop: Callable[..., str]) -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root for a loop device")
    name = make_loop(16)
    run = _to_dev_full("set", name, "read_ahead_kb=16", "--dry-run")
    assert one_line(run.stderr) == "iotop-plus: error: cannot write output: No space left on device"
    assert run.returncode == 1
