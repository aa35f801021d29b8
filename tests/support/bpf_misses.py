"""How many times the kernel skipped our tracers' BPF programs.

The kernel runs one BPF tracing program at a time per CPU: a tracepoint whose program would
start while another one (any tracer's, host-wide) runs on the same CPU is skipped, and the
skipped program's ``recursion_misses`` (in its fd's ``/proc/PID/fdinfo``) grows. On a host
where other jobs trace too, a tracer can then miss a few percent of requests that it would
otherwise count exactly. A test that checks an exact count allows what the kernel says it
skipped, and nothing more.
"""

from __future__ import annotations

import os
from pathlib import Path


def _children(pid: int, comm: str) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            # Any byte can be in another process's comm (a hostile-name test's): not UTF-8.
            stat = (entry / "stat").read_bytes().decode("utf-8", "surrogateescape")
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        ppid = int(stat[stat.rindex(")") + 2 :].split()[1])
        if ppid == pid and name == comm:
            found.append(int(entry.name))
    return found


def recursion_misses(pid: int) -> int:
    """The runs the kernel skipped of the BPF programs process ``pid`` holds open."""
    total = 0
    fdinfo = Path(f"/proc/{pid}/fdinfo")
    try:
        entries = list(fdinfo.iterdir())
    except OSError:
        return 0
    for entry in entries:
        try:
            text = entry.read_text()
        except OSError:
            continue
        for line in text.splitlines():
            if line.startswith("recursion_misses:"):
                total += int(line.split()[1])
    return total


def tracer_misses() -> int:
    """Skipped runs of every ``bpftrace`` this test process started (its tracers and any
    reference capture), so far."""
    return sum(recursion_misses(pid) for pid in _children(os.getpid(), "bpftrace"))
