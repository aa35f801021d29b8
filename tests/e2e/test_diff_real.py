"""``diff`` of a real recording: what the test changed at the half is what the diff ranks first.

Four loop devices of the test's own, on filled files with direct I/O, so their reads reach the
disk underneath. The second one's reader runs in a v1 blkio cgroup of the test's whose reads of
that disk are throttled to 1000 IOPS: a device with a fixed rate, like a real one, so a deeper
queue makes each request wait longer (the loop device's request is in flight until its read of
the backing file, charged to the reader's cgroup, gets through).
In the first half fio reads the first at a steady rate and the second at queue depth 1; at the
half the test changes the first's scheduler with ``iotop-plus set``, starts a ``dd`` writer on
the third and raises the second's reader to queue depth 32. The diff of the halves, among the
changes on the test's devices, has in its top four: the setting on the first, the new ``dd``
issuer on the third, and the second's queue and await shift. The fourth device stays idle.

Each half lasts ``IOTOP_PLUS_DIFF_HALF_S`` seconds (default 60; the issue's recording is 10
minutes: 300).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import time
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.support.cgroup_trees import remove_live_cgroup
from tests.support.cli import cli_argv, cli_env
from tests.support.queue_guard import restored_queue
from tests.support.wait import holds_within

pytestmark = pytest.mark.root

HALF_S = float(os.environ.get("IOTOP_PLUS_DIFF_HALF_S", "60"))
"""Seconds of each half of the recording."""
SETTLE_S = 5.0
"""Seconds after the start and after the half left out of the windows (jobs starting)."""


def need_tracer() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (bpftrace, loop devices)")
    if shutil.which("bpftrace") is None:
        pytest.skip("bpftrace is not installed (make sysdeps installs it)")


BLKIO_V1 = Path("/sys/fs/cgroup/blkio")
THROTTLE_IOPS = 1000
"""Reads per second of the backing disk the second device's reader gets."""


def disk_of(path: Path) -> str:
    """``MAJ:MIN`` of the whole disk that holds ``path``."""
    st = os.stat(path).st_dev
    node = Path(f"/sys/dev/block/{os.major(st)}:{os.minor(st)}")
    if not node.exists():
        pytest.skip(f"{path} is not on a block device")
    real = node.resolve()
    if (real / "partition").exists():
        real = real.parent
    return (real / "dev").read_text().strip()


@contextmanager
def throttled_cgroup(disk: str) -> Iterator[Path]:
    """A v1 blkio cgroup of the test's whose reads of ``disk`` are throttled (removed after)."""
    if not (BLKIO_V1 / "cgroup.procs").exists():
        pytest.skip("no v1 blkio hierarchy mounted at /sys/fs/cgroup/blkio")
    path = BLKIO_V1 / f"iotop-plus-test-{os.getpid()}-diff"
    path.mkdir()
    try:
        (path / "blkio.throttle.read_iops_device").write_text(f"{disk} {THROTTLE_IOPS}")
        yield path
    finally:
        remove_live_cgroup(path)


def fio(
    dev: str, seconds: float, *extra: str, cgroup: Path | None = None
) -> subprocess.Popen[bytes]:
    argv = [
        "fio", f"--name=diff-{dev}", f"--filename=/dev/{dev}", "--rw=randread", "--bs=4k",
        "--direct=1", "--readonly", "--thread", "--time_based", f"--runtime={seconds:.0f}",
        "--output-format=json", *extra,
    ]  # fmt: skip
    procs = cgroup / "cgroup.procs" if cgroup is not None else None

    def enter() -> None:
        if procs is not None:
            procs.write_text(str(os.getpid()))

    return subprocess.Popen(
        argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, preexec_fn=enter
    )


def stop(proc: subprocess.Popen[Any]) -> None:
    """End a process the test started (a shell loop started in its own session: its group)."""
    if proc.poll() is None:
        if isinstance(proc.args, list) and proc.args[0] == "sh":
            os.killpg(proc.pid, signal.SIGTERM)
        else:
            proc.terminate()
    proc.wait(30)


@contextmanager
def running(procs: list[subprocess.Popen[Any]]) -> Iterator[list[subprocess.Popen[Any]]]:
    """Every process in ``procs`` (also those added later) is stopped on the way out."""
    try:
        yield procs
    finally:
        for proc in procs:
            stop(proc)


def other_scheduler(dev: str) -> str:
    text = Path(f"/sys/block/{dev}/queue/scheduler").read_text()
    names = [w.strip("[]") for w in text.split()]
    current = next(w.strip("[]") for w in text.split() if w.startswith("["))
    others = [n for n in names if n != current]
    if not others:
        pytest.skip(f"{dev} offers no other scheduler than {current}")
    return "none" if "none" in others else others[0]


@pytest.mark.timeout(2 * HALF_S + 240)
def test_the_diff_of_the_halves_ranks_what_the_test_changed(
    make_loop: Callable[..., str], fio_bin: str, tmp_path: Path
) -> None:
    need_tracer()
    devs = [make_loop(64, direct_io=True, filled=True) for _ in range(4)]
    state = tmp_path / "state"
    recordings = tmp_path / "recordings"
    env = cli_env()
    with ExitStack() as stack:
        stack.enter_context(restored_queue(devs[0]))
        cgroup = stack.enter_context(throttled_cgroup(disk_of(tmp_path)))
        log = stack.enter_context((tmp_path / "record.err").open("w"))
        recorder = subprocess.Popen(
            cli_argv("record", "--dir", str(recordings), "-i", "1", "--issuers",
                     "--processes", "0", state=state),
            stderr=log, text=True, env=env, cwd="/",
        )  # fmt: skip
        jobs: list[subprocess.Popen[Any]] = []
        stack.enter_context(running([recorder]))
        stack.enter_context(running(jobs))

        def started() -> bool:
            return "recording every" in (tmp_path / "record.err").read_text()

        assert holds_within(started, 60), (tmp_path / "record.err").read_text()
        jobs.append(fio(devs[0], 2 * HALF_S + 30, "--ioengine=psync", "--rate_iops=200"))
        jobs.append(fio(devs[1], HALF_S + 30, "--ioengine=psync", "--rate_iops=300", cgroup=cgroup))
        start = time.time()
        time.sleep(HALF_S)  # the first half's length (the workload's, not a wait for anything)
        mid = time.time()
        jobs[1].terminate()
        jobs[1].wait(30)
        jobs.append(fio(devs[1], HALF_S + 30, "--ioengine=libaio", "--iodepth=32", cgroup=cgroup))
        done = subprocess.run(
            cli_argv("set", devs[0], f"scheduler={other_scheduler(devs[0])}", state=state),
            capture_output=True, text=True, env=env, cwd="/", timeout=60,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        dd = (
            f"while :; do dd if=/dev/zero of=/dev/{devs[2]} bs=64k count=512 oflag=direct "
            "status=none || exit 1; done"
        )
        jobs.append(subprocess.Popen(["sh", "-c", dd], start_new_session=True))
        time.sleep(HALF_S)  # the second half
        end = time.time()
        for proc in [*jobs, recorder]:
            stop(proc)
    a = f"@{start + SETTLE_S:.0f}..@{mid - 1:.0f}"
    b = f"@{mid + SETTLE_S:.0f}..@{end - 1:.0f}"
    out = subprocess.run(
        cli_argv("diff", "--from", str(recordings), "--a", a, "--b", b, "-f", "json"),
        capture_output=True, text=True, env=env, cwd="/", timeout=120,
    )  # fmt: skip
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    mine = [c for c in doc["changes"] if c["device"] in devs]
    top = mine[:4]
    shown = json.dumps([(c["rank"], c["kind"], c["device"], c["what"]) for c in mine[:8]])
    print(shown)
    assert any(c["kind"] == "setting" and c["device"] == devs[0] for c in top), shown
    assert any(
        c["kind"] == "issuer" and c["device"] == devs[2] and c["evidence"].get("comm") == "dd"
        for c in top
    ), shown
    loop1 = [c for c in top if c["kind"] == "figure" and c["device"] == devs[1]]
    assert loop1, shown
    assert {"aqu", "await"} <= set(loop1[0]["evidence"]["changed"]), json.dumps(loop1[0])
    assert loop1[0]["after"]["aqu"] > loop1[0]["before"]["aqu"]
    assert not any(c["device"] == devs[3] for c in mine), shown
