"""Safety first (#11) on the real console script: live trees only, a journal that cannot be
turned against root, and the leftovers of an A/B killed with SIGKILL.

Every run gets its own ``--state-dir`` (tests never touch /var/lib/iotop-plus). The attacker
is nobody, through setpriv.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import psutil
import pytest

from tests.support.loopdev import attach, bound_to, detach, require_loop_devices
from tests.support.queue_guard import queue_values, restored_queue
from tests.support.wait import holds_within

REPO = Path(__file__).resolve().parents[2]
NOBODY = ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups"]
LOOP_CLR_FD, LOOP_SET_FD, LOOP_CTL_ADD = 0x4C01, 0x4C00, 0x4C80


def cli(
    *args: str, state: Path | None, home: Path | None = None, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    # HOME and XDG point into the test's directory too, in case anything ignored --state-dir.
    home = home or (state.parent if state is not None else None)
    assert home is not None, "give the test's own directory as home"
    env = {**os.environ, "PYTHONPATH": str(REPO), "HOME": str(home), "XDG_STATE_HOME": str(home)}
    flag = ["--state-dir", str(state)] if state is not None else []
    return subprocess.run(
        [sys.executable, "-m", "iotop_plus", *flag, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
        timeout=timeout,
    )


@pytest.fixture
def loop(make_loop: Callable[..., str]) -> Iterator[str]:
    name = make_loop(32)
    with restored_queue(name):
        yield name


def read_ahead(device: str) -> str:
    return (Path("/sys/block") / device / "queue" / "read_ahead_kb").read_text().strip()


# --- item 3: a captured tree is never written --------------------------------------------------


def test_set_through_a_captured_tree_with_a_symlink_is_refused(tmp_path: Path) -> None:
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    queue = tmp_path / "tree" / "sys" / "block" / "fake0" / "queue"
    queue.mkdir(parents=True)
    (queue / "read_ahead_kb").symlink_to(victim)
    (tmp_path / "tree" / "sys" / "class" / "block").mkdir(parents=True)
    (tmp_path / "tree" / "sys" / "class" / "block" / "fake0").symlink_to("../../block/fake0")
    run = cli("--sys-root", str(tmp_path / "tree" / "sys"), "set", "fake0", "read_ahead_kb=64",
              state=None, home=tmp_path)  # fmt: skip
    assert run.returncode == 2, run.stdout
    assert run.stderr.count("\n") == 1
    assert "changes go only to the live /sys and /proc" in run.stderr
    assert victim.read_text() == "precious\n"


def test_a_5000_digit_value_is_one_line(loop: str, tmp_path: Path) -> None:
    run = cli("set", loop, "read_ahead_kb=" + "9" * 5000, state=tmp_path / "s")
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and "Traceback" not in run.stderr
    assert "5000-digit number is out of range" in run.stderr


# --- item 4: the journal ----------------------------------------------------------------------


def test_a_symlinked_journal_refuses_the_change_and_names_it(loop: str, tmp_path: Path) -> None:
    before = queue_values(loop)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    state = tmp_path / "state"
    state.mkdir(mode=0o700)
    (state / "changes.jsonl").symlink_to(victim)
    run = cli("set", loop, "read_ahead_kb=16", state=state)
    assert run.returncode == 1
    assert run.stderr.count("\n") == 1
    assert f"{state}/changes.jsonl is a symbolic link" in run.stderr
    assert victim.read_text() == "precious\n"
    assert queue_values(loop) == before
    # The only escape is explicit, and says what it means.
    escape = cli("set", loop, "read_ahead_kb=16", "--no-journal", state=state)
    assert escape.returncode == 0, escape.stderr
    assert "not journaled (--no-journal)" in escape.stderr
    assert victim.read_text() == "precious\n"


def test_a_state_dir_prepared_by_nobody_is_refused(loop: str, tmp_path: Path) -> None:
    if shutil.which("setpriv") is None:
        pytest.skip("setpriv is not installed")
    before = queue_values(loop)
    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    play = Path(tempfile.mkdtemp(prefix="iotop-plus-test-"))
    try:
        os.chmod(play, 0o777)
        state = play / "iotop-plus"
        subprocess.run(
            [*NOBODY, "sh", "-c", f"mkdir -m 700 {state} && ln -s {victim} {state}/changes.jsonl"],
            check=True,
        )
        run = cli("set", loop, "read_ahead_kb=16", state=state)
        assert run.returncode == 1
        assert f"the state directory {state} is owned by uid 65534" in run.stderr
        assert victim.read_text() == "precious\n"
        assert queue_values(loop) == before
    finally:
        shutil.rmtree(play)


def test_the_journal_is_0600_in_a_0700_dir_and_set_closes_its_change(
    loop: str, tmp_path: Path
) -> None:
    state = tmp_path / "state"
    run = cli("set", loop, "read_ahead_kb=16", state=state)
    assert run.returncode == 0, run.stderr
    assert oct(state.stat().st_mode & 0o777) == "0o700"
    assert oct((state / "changes.jsonl").stat().st_mode & 0o777) == "0o600"
    records = [json.loads(x) for x in (state / "changes.jsonl").read_text().splitlines()]
    assert [(r["record"], r.get("reason")) for r in records] == [
        ("intent", None), ("change", None), ("keep", "set"),
    ]  # fmt: skip
    assert records[0]["diskseq"] == (Path("/sys/block") / loop / "diskseq").read_text().strip()


# --- item 9: values the kernel stores alike ---------------------------------------------------


def test_an_ab_of_values_the_kernel_stores_alike_is_refused_before_running(
    loop: str, tmp_path: Path, fio_bin: str
) -> None:
    before = read_ahead(loop)
    run = cli("ab", loop, "read_ahead_kb=1,2", "--preset", "seqscan", "--target", f"/dev/{loop}",
              "--runtime", "1", "--rounds", "1", state=tmp_path / "s")  # fmt: skip
    assert run.returncode == 1
    assert f"{loop} read_ahead_kb: 1 and 2 both become 0 (rounded down" in run.stderr
    assert "round 1" not in run.stderr  # nothing ran
    assert read_ahead(loop) == before
    assert not (tmp_path / "s" / "changes.jsonl").exists()  # nothing was changed


# --- item 7: kill -9 mid-A/B ------------------------------------------------------------------


@contextlib.contextmanager
def own_loop(directory: Path) -> Iterator[tuple[str, Path]]:
    """A loop device on our own file. Teardown detaches it and puts its queue back only while
    it is still attached to our file (the stale case re-attaches the node)."""
    require_loop_devices()
    backing = directory / "own.img"
    with open(backing, "xb") as fh:
        fh.truncate(64 * 1024 * 1024)
    name = attach(backing)
    original = queue_values(name)

    try:
        yield name, backing
    finally:
        if name in bound_to(backing):
            for setting, value in original.items():
                with contextlib.suppress(OSError):
                    (Path("/sys/block") / name / "queue" / setting).write_text(value)
            detach(name, backing)
        backing.unlink(missing_ok=True)


def kill_ab_mid_run(device: str, state: Path) -> None:
    """Start an A/B, SIGKILL it while the first value is in force, and wait for fio to die."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.Popen(
        [sys.executable, "-m", "iotop_plus", "--state-dir", str(state), "ab", device,
         "read_ahead_kb=12,20", "--preset", "seqscan", "--target", f"/dev/{device}",
         "--runtime", "10", "--rounds", "3"],
        stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, env=env, cwd="/",
    )  # fmt: skip
    children: list[psutil.Process] = []
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if "read_ahead_kb=12" in line and "IOPS" in line:  # fio is running
                break
        else:
            pytest.fail(f"the A/B never started (exit {proc.wait()})")
        children = psutil.Process(proc.pid).children(recursive=True)
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=10) == -signal.SIGKILL
        _, alive = psutil.wait_procs(children, timeout=10)
        assert alive == [], "fio outlived the A/B it belonged to"
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        for child in children:
            with contextlib.suppress(psutil.Error):
                child.kill()


def reattach(device: str, backing: Path) -> None:
    """Detach the node and attach it to our file again (a new diskseq under the same name).

    In between, another process's ``losetup --find`` may take the free number for a moment
    (EBUSY: asked again once it lets go), or remove its node after using it (ENOENT: the
    number is added back through ``/dev/loop-control``)."""
    fd = os.open(f"/dev/{device}", os.O_RDWR)
    try:
        fcntl.ioctl(fd, LOOP_CLR_FD)
    finally:
        os.close(fd)
    # The detach completes at the last close.
    assert holds_within(lambda: not (Path("/sys/block") / device / "loop").exists(), 5)

    def attached() -> bool:
        try:
            dev_fd = os.open(f"/dev/{device}", os.O_RDWR)
        except FileNotFoundError:
            control = os.open("/dev/loop-control", os.O_RDWR)
            try:
                with contextlib.suppress(FileExistsError):
                    fcntl.ioctl(control, LOOP_CTL_ADD, int(device.removeprefix("loop")))
            finally:
                os.close(control)
            return False
        file_fd = os.open(backing, os.O_RDWR)
        try:
            fcntl.ioctl(dev_fd, LOOP_SET_FD, file_fd)
        except OSError as exc:
            if exc.errno != errno.EBUSY:
                raise
            return False
        finally:
            os.close(dev_fd)
            os.close(file_fd)
        return True

    assert holds_within(attached, 10), f"{device} stayed someone else's for 10 s"


def test_an_ab_killed_with_sigkill_leaves_a_leftover_that_restore_puts_back(
    tmp_path: Path, fio_bin: str
) -> None:
    state = tmp_path / "state"
    with own_loop(tmp_path) as (dev, backing):
        original = read_ahead(dev)
        kill_ab_mid_run(dev, state)
        assert read_ahead(dev) == "12"  # nothing noticed: the setting stayed changed

        # The next A/B must not call the leftover value "the original".
        again = cli("ab", dev, "read_ahead_kb=12,20", "--preset", "seqscan", "--target",
                    f"/dev/{dev}", "--runtime", "1", "--rounds", "1", state=state)  # fmt: skip
        assert again.returncode == 1
        refusal = (
            f"{dev} read_ahead_kb is 12, left by a run that ended without undoing or keeping "
            f"it (original {original}); first run `iotop-plus --state-dir {state} restore` (puts "
            f"the originals back) or `iotop-plus --state-dir {state} restore --keep` (keeps the "
            "values)"
        )
        assert refusal in again.stderr
        assert "round 1" not in again.stderr
        setting = cli("set", dev, "read_ahead_kb=64", state=state)
        assert (setting.returncode, setting.stderr) == (1, f"iotop-plus: error: {refusal}\n")
        assert read_ahead(dev) == "12"

        dry = cli("restore", "--dry-run", state=state)
        assert (dry.returncode, dry.stdout) == (
            0,
            f"{dev} read_ahead_kb: 12 -> {original}, would restore (dry run)\n",
        )
        assert read_ahead(dev) == "12"
        done = cli("restore", state=state)
        assert (done.returncode, done.stdout) == (
            0,
            f"{dev} read_ahead_kb: 12 -> {original}, restored\n",
        )
        assert read_ahead(dev) == original  # the exact original, read from sysfs
        assert cli("restore", state=state).stdout == ""

        # Killed again, then the node is re-attached: another device under the same name.
        kill_ab_mid_run(dev, state)
        old_seq = (Path("/sys/block") / dev / "diskseq").read_text().strip()
        reattach(dev, backing)
        new_seq = (Path("/sys/block") / dev / "diskseq").read_text().strip()
        assert new_seq != old_seq
        before = read_ahead(dev)
        stale = cli("restore", state=state)
        assert stale.returncode == 0, stale.stderr
        assert stale.stdout.startswith(f"{dev} read_ahead_kb: 12 -> {original}, stale (")
        assert f"diskseq {new_seq}, was {old_seq}" in stale.stdout
        assert read_ahead(dev) == before  # never restored onto the new device
        # Reported and closed: not reported again, and nothing refuses the new device.
        assert cli("restore", "--dry-run", state=state).stdout == ""
