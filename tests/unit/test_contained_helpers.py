"""External helpers run contained (``programs.run_contained``): in their own session, killed
as a group when they exit, at the deadline, on cancel and at exit, their output read up to
4 MiB, and one line saying what happened."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import tracemalloc
from pathlib import Path

from iotop_plus.programs import (
    CANCELLED,
    EXITED,
    OUTPUT_CAP,
    TIMED_OUT,
    TOO_MUCH,
    run_contained,
)
from tests.support.fake_programs import pids, running, script
from tests.support.wait import holds_within


def test_a_helper_that_exits_leaving_a_child_on_its_output_ends_at_once(tmp_path: Path) -> None:
    """The child keeps stdout open for 600 s: the run ends when the helper exits, with what it
    printed, and the child is killed with it (it was left running, and the run waited for
    EOF until the deadline)."""
    child = tmp_path / "child"
    helper = script(tmp_path, f'sleep 600 &\necho $! > "{child}"\necho \'{{"ok": 1}}\'\n')
    run = run_contained([str(helper)], timeout=60.0)
    assert run.ended == EXITED and run.returncode == 0
    assert run.out == b'{"ok": 1}\n'
    assert run.left_behind == 1
    assert run.problem() == "helper exited leaving 1 process(es) running; killed"
    assert holds_within(lambda: not running(pids(child)[0]), 5.0)


def test_a_helper_that_never_answers_is_killed_with_its_children(tmp_path: Path) -> None:
    started = tmp_path / "pids"
    helper = script(tmp_path, f'sleep 600 &\necho $! >> "{started}"\necho $$ >> "{started}"\n'
                    "exec sleep 600\n")  # fmt: skip
    run = run_contained([str(helper)], timeout=0.5)
    assert run.ended == TIMED_OUT and run.returncode is None
    assert run.problem() == (
        "helper gave no answer in 0.5 s and was killed with the 1 process it started"
    )
    assert holds_within(lambda: not any(running(p) for p in pids(started)), 5.0)


def test_a_helper_that_prints_without_end_is_stopped_at_the_cap(tmp_path: Path) -> None:
    """``yes`` prints at some GB/s: the run stops after 4 MiB, whatever its deadline, holding
    little more than that."""
    helper = script(tmp_path, "exec yes 0123456789abcdef0123456789abcdef\n")
    tracemalloc.start()
    try:
        run = run_contained([str(helper)], timeout=600.0)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert run.ended == TOO_MUCH and run.returncode is None
    assert len(run.out) == OUTPUT_CAP
    assert run.problem() == "helper printed more than 4 MiB; it was stopped and killed"
    assert peak < 2.5 * OUTPUT_CAP


def test_a_cancelled_run_kills_the_helper_and_says_so(tmp_path: Path) -> None:
    started = tmp_path / "pid"
    helper = script(tmp_path, f'echo $$ > "{started}"\nexec sleep 600\n')
    cancel = threading.Event()
    result = []
    worker = threading.Thread(
        target=lambda: result.append(run_contained([str(helper)], timeout=600.0, cancel=cancel))
    )
    worker.start()
    assert holds_within(lambda: started.exists() and started.read_text().strip() != "", 10.0)
    cancel.set()
    worker.join(10.0)
    (run,) = result
    assert run.ended == CANCELLED
    assert run.problem() == "helper was stopped before it answered (iotop-plus is quitting)"
    assert holds_within(lambda: not running(pids(started)[0]), 5.0)


def test_stderr_is_read_when_asked_and_capped_too(tmp_path: Path) -> None:
    helper = script(tmp_path, "echo out\necho err >&2\nexit 3\n")
    run = run_contained([str(helper)], timeout=60.0, stderr=True)
    assert (run.out, run.err, run.returncode, run.problem()) == (b"out\n", b"err\n", 3, None)


def test_a_helper_still_running_when_iotop_plus_exits_is_killed(tmp_path: Path) -> None:
    """A worker thread (a daemon, as the health worker) waits on a helper that forked a
    child; the process exits: neither outlives it."""
    started = tmp_path / "pids"
    helper = script(tmp_path, f'sleep 600 &\necho $! >> "{started}"\necho $$ >> "{started}"\n'
                    "exec sleep 600\n")  # fmt: skip
    code = (
        "import threading, time, pathlib\n"
        "from iotop_plus.programs import run_contained\n"
        f"threading.Thread(target=run_contained, args=([{str(helper)!r}],),"
        " kwargs={'timeout': 600.0}, daemon=True).start()\n"
        f"p = pathlib.Path({str(started)!r})\n"
        "while not p.exists() or len(p.read_text().split()) < 2: time.sleep(0.01)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], timeout=60, capture_output=True, text=True, check=False,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert holds_within(lambda: not any(running(p) for p in pids(started)), 5.0)
