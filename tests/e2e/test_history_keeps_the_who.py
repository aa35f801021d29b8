"""History keeps the who, for real: the recorder on three fio processes in three cgroups.

Three fio jobs read a loop device, each in its own cgroup (a v1 blkio child on this hybrid
host; a v2 child where v2 has the io controller). ``iotop-plus record`` runs for a few
samples; the recording must then name each process's own command line (not ``fio`` three
times) and its cgroup (not ``-`` or the v2 root every task sits in here), keep the cgroups
with their split per device, and replay must show all of that in the Processes and Cgroups
tabs. On kernels with lazily activated blk-throttle (6.x), v1's counters count only on devices
with a throttle rule: each child gets one far above anything fio does (1 TiB/s).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.cgroups.reader import V1, V2, detect_layout
from iotop_plus.tui.replay import make_replay_app
from iotop_plus.tui.widgets.cgroup_panel import CgroupPanel
from iotop_plus.tui.widgets.process_panel import ProcessPanel
from tests.support.cli import run_cli
from tests.support.loopdev import loop_device
from tests.support.wait import holds_within, wait_for

pytestmark = [pytest.mark.root, pytest.mark.slow]

HUGE = str(1 << 40)
JOBS = ("who-a", "who-b", "who-c")


def _cgroup_base() -> tuple[Path, str]:
    """Where a child cgroup with I/O figures is made here, and its version."""
    if os.geteuid() != 0:
        pytest.skip("needs root to make cgroups")
    layout = detect_layout(Roots())
    if layout.version == V1:
        return Path(layout.root), V1
    if layout.version == V2:
        return Path(layout.root), V2
    pytest.skip(f"no per-cgroup I/O on this host: {layout.notice}")


def _child(base: Path, version: str, name: str, devno: str, stack: ExitStack) -> Path:
    child = base / name
    child.mkdir()
    stack.callback(_remove, child)
    if version == V1:
        for rule in ("read_bps_device", "write_bps_device"):
            (child / f"blkio.throttle.{rule}").write_text(f"{devno} {HUGE}\n")
    return child


def _remove(child: Path) -> None:
    holds_within(lambda: _rmdir(child), 10.0)  # fio must be gone before its cgroup can go


def _rmdir(child: Path) -> bool:
    try:
        child.rmdir()
    except FileNotFoundError:
        return True
    except OSError:
        return False
    return True


def _join(cgroup: Path) -> Callable[[], None]:
    def join() -> None:
        (cgroup / "cgroup.procs").write_text(f"{os.getpid()}\n")

    return join


def _counted(cgroup: Path, version: str) -> bool:
    name = "blkio.throttle.io_serviced" if version == V1 else "io.stat"
    text = (cgroup / name).read_text()
    if version == V1:
        return any(w.isdigit() and int(w) > 0 for w in text.split()[2::3])
    return "rios=" in text and "rios=0 " not in text


@pytest.fixture
def three_fio_jobs(tmp_path: Path) -> Iterator[tuple[str, dict[str, str]]]:
    """(loop device, {job name: cgroup path}): three fio processes reading it."""
    fio = shutil.which("fio")
    if fio is None:
        pytest.skip("fio is not installed (apt-get install fio)")
    base, version = _cgroup_base()
    with ExitStack() as stack:  # undone in reverse: fio stops, the cgroups go, the loop
        dev = stack.enter_context(loop_device(tmp_path, size_mb=64))
        devno = (Path("/sys/class/block") / dev / "dev").read_text().strip()
        cgroups: dict[str, str] = {}
        children: dict[str, Path] = {}
        for job in JOBS:
            name = f"iotop-plus-test-{os.getpid()}-{job}"
            children[job] = _child(base, version, name, devno, stack)
            cgroups[job] = f"/{name}"
        procs: list[subprocess.Popen[bytes]] = []
        stack.callback(_stop, procs)
        for job in JOBS:
            argv = [
                fio, f"--name={job}", f"--filename=/dev/{dev}", "--readonly",
                "--rw=randread", "--bs=4k", "--direct=1", "--ioengine=psync",
                "--time_based", "--runtime=120", "--rate_iops=200",
            ]  # fmt: skip
            procs.append(
                subprocess.Popen(
                    argv,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    preexec_fn=_join(children[job]),
                )
            )
        for job in JOBS:
            counted = functools.partial(_counted, base / cgroups[job].lstrip("/"), version)
            assert holds_within(counted, 30.0), f"{job} did no I/O"
        yield dev, cgroups


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in procs:
        p.terminate()
    for p in procs:
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


async def test_a_recording_of_three_fio_processes_keeps_their_command_lines_and_cgroups(
    three_fio_jobs: tuple[str, dict[str, str]], tmp_path: Path
) -> None:
    dev, cgroups = three_fio_jobs
    rec = tmp_path / "rec"
    done = run_cli("record", "--dir", str(rec), "-i", "0.5", "--count", "6", state=tmp_path / "st")
    assert done.returncode == 0, done.stderr
    from iotop_plus.record.timeline import open_timeline

    timeline = open_timeline(rec)
    try:
        span = timeline.span()
        assert span is not None
        # The latest frame in which all three cgroups read the device: on a loaded host a
        # 0.5 s interval can pass without a 200 IOPS job getting a CPU.
        busy = [
            (rs.sample.wall_time, f)
            for rs, f in timeline.frames(*span)
            if f.cgroups is not None
            and all(
                (r := f.cgroups.rates.get(cgroups[job])) is not None
                and r.devices.get(dev) is not None
                for job in JOBS
            )
        ]
        assert busy, "no recorded frame has all three cgroups reading the device"
        at, frame = busy[-1]
        assert frame.processes is not None
        tasks = {k: r.task for k, r in frame.processes.rates.items() if r is not None}
        by_job = {
            job: [k for k, t in tasks.items() if f"--name={job}" in t.cmdline] for job in JOBS
        }
        # Three fio processes, three command lines (not "fio" three times).
        assert all(len(keys) == 1 for keys in by_job.values()), by_job
        assert {tasks[by_job[j][0]].comm for j in JOBS} == {"fio"}
        # Each in its own cgroup, as recorded.
        for job in JOBS:
            assert frame.processes.cgroups[by_job[job][0]] == cgroups[job]
        # The cgroups doing I/O, with their split per device: each read the loop device.
        assert frame.cgroups is not None
        for job in JOBS:
            rates = frame.cgroups.rates[cgroups[job]]
            assert rates is not None and rates.devices[dev].read_iops > 0
        # Replay shows the recorded frame: the three command lines, the three cgroups and
        # the selected one's device split.
        app = make_replay_app(Roots(), timeline, at)
        async with app.run_test(size=(200, 50)) as pilot:
            await wait_for(pilot, lambda: app.main_screen.shown_frame is not None)
            await app.main_screen.run_action("panel_tab('tab-processes')")
            await wait_for(pilot, lambda: bool(app.main_screen.query(ProcessPanel)))
            panel = app.main_screen.query_one(ProcessPanel)
            await wait_for(pilot, lambda: panel.last is not None, "the recorded processes")
            commands = [r.command for r in panel.process_list.rows]
            for job in JOBS:
                assert sum(f"--name={job}" in c for c in commands) == 1, commands
            await pilot.press("C")
            await wait_for(pilot, lambda: bool(app.main_screen.query(CgroupPanel)))
            cg = app.main_screen.query_one(CgroupPanel)
            await wait_for(pilot, lambda: cg.last is not None, "the recorded cgroups")
            paths = [r.path for r in cg.cgroup_list.rows]
            assert set(cgroups.values()) <= set(paths)
            cg.cgroup_list.move_cursor(paths.index(cgroups["who-b"]))
            split = cg.query_one("#cgroup-devices")
            await wait_for(pilot, lambda: dev in str(split.render()), "the device split")
            assert "recorded (those with I/O or limits)" in cg.status_text()
    finally:
        timeline.close()
