"""The bpftrace program of the latency tracer, and what the kernel offers it.

:func:`tracer_program` is the program text (see :mod:`iotop_plus.sampling.latency` for how
frames use it); :func:`tracer_problem`, :func:`marker_present` and
:func:`submit_tracepoint` look at this kernel and host before a tracer starts.
"""

from __future__ import annotations

import os
import subprocess

from iotop_plus.programs import lookup_program

TICK_MS = 250
"""How often the child prints and clears its maps on its own (frames mark their own ends)."""
TRACEFS = "/sys/kernel/tracing"
"""Where tracefs is mounted when it is missing."""
_EVENT_DIRS = (f"{TRACEFS}/events/block", "/sys/kernel/debug/tracing/events/block")
MARK_TRACEPOINT = "syscalls/sys_enter_kill"
"""Where the program catches the frame's marker syscall (``kill(tracer_pid, 0)``)."""
MARKER = "iotop-plus-latency"
"""First-line comment of the program: ``pgrep -f`` finds our tracers by it."""

_BUCKET = """    $e = 0; $x = $v;
    if ($x >= 4294967296) { $x = $x >> 32; $e = $e + 32; }
    if ($x >= 65536) { $x = $x >> 16; $e = $e + 16; }
    if ($x >= 256) { $x = $x >> 8; $e = $e + 8; }
    if ($x >= 16) { $x = $x >> 4; $e = $e + 4; }
    if ($x >= 4) { $x = $x >> 2; $e = $e + 2; }
    if ($x >= 2) { $e = $e + 1; }
    $s = $e >= 3 ? ($v >> ($e - 3)) & 7 : 0;
"""


FLUSH_WRITE = "flush+write"
"""The operation of writes that carry a preflush or FUA (a filesystem's journal commits, the
empty write each fsync of a raw device sends), timed from submission to the end of the
kernel's whole flush sequence; only a tracer with ``issuers`` keeps them apart."""
ISSUE_TRACEPOINTS = ("block_io_start", "block_bio_queue")
"""Tracepoints that run in the submitting task's context, newest kernels' first: bpftrace's
``pid`` and ``comm`` name the issuer (``block_io_start`` since Linux 6.5)."""


def tracer_program(
    *,
    queue: bool,
    tick_ms: int = TICK_MS,
    tag: str = "",
    issuers: bool = False,
    submit: str = ISSUE_TRACEPOINTS[0],
    only_dev: int | None = None,
    marked: bool = False,
) -> str:
    """The bpftrace program (its first line carries :data:`MARKER`, our pid and ``tag``).

    ``marked``: our ``kill(pid, 0)`` (signal 0 from this process, see :meth:`Tracer.mark`)
    also prints and clears the maps, ending with ``mark <nsecs>`` instead of ``tick``.

    ``only_dev`` (a kernel dev_t) keeps every block probe to that device (a probe's tracer:
    a loop device's backing I/O costs nothing then).

    With ``issuers`` (a probe's tracer) it also counts requests by issuer at ``submit`` (one
    of :data:`ISSUE_TRACEPOINTS`) into ``@who[dev, pid, comm]``, and times writes that carry
    a preflush or FUA apart (:data:`FLUSH_WRITE`: ``@fh``, ``@fs``, ``@fm``). Seen on Linux
    6.18: rwbs at submission still has the flags (``FWS`` is an fsync's empty preflush write,
    ``FWFSM`` a journal commit; ``WF...`` is FUA alone), while at issue and completion the
    kernel has stripped what it sends as separate flushes (``FF``, whose completion reports
    sector -1). Such a write completes once with its data and once more, with no sectors, at
    the end of its flush sequence; a FUA-only write on a device that honours FUA completes
    once, FUA still set. Those completions end the timing; every completion of such a write
    is kept out of the plain writes. Flushes are not stamped at issue (no sectors): their
    stamp at sector 0 would time the empty write that completes there.
    """
    lines = [f"// {MARKER} pid={os.getpid()} {tag}".rstrip()]
    only = f" /args->dev == {int(only_dev)}/" if only_dev is not None else ""
    if queue:
        lines.append(
            f"tracepoint:block:block_rq_insert{only} {{ @iq[args->dev, args->sector] = nsecs; }}"
        )
    if issuers:
        lines += [
            f"tracepoint:block:{submit}{only} {{",
            "  @who[args->dev, pid, comm] = count();",
            '  if (strncmp(args->rwbs, "FW", 2) == 0) {',
            "    @fw[args->dev, args->sector] = (nsecs << 1) | 1;",
            '  } else if (strncmp(args->rwbs, "WF", 2) == 0) {',
            "    @fw[args->dev, args->sector] = nsecs << 1;",
            "  }",
            "}",
        ]
    lines.append(f"tracepoint:block:block_rq_issue{only} {{")
    if issuers:
        lines.append("  if (args->nr_sector) { @is[args->dev, args->sector] = nsecs; }")
    else:
        lines.append("  @is[args->dev, args->sector] = nsecs;")
    if queue:
        lines += [
            "  $t = @iq[args->dev, args->sector];",
            "  if ($t) {",
            "    delete(@iq[args->dev, args->sector]);",
            "    @qs[args->dev, args->rwbs] = sum(nsecs - $t);",
            "    @qn[args->dev, args->rwbs] = count();",
            "  }",
        ]
    lines += [
        "}",
        f"tracepoint:block:block_rq_complete{only} {{",
        "  $t = @is[args->dev, args->sector];",
    ]
    plain = "  if ($t) {"
    if issuers:
        lines += [
            "  $w = @fw[args->dev, args->sector];",
            "  if ($w) {",
            "    if ($t) { delete(@is[args->dev, args->sector]); }",
            "    if (args->nr_sector == 0 ||",
            '        (($w & 1) == 0 && strncmp(args->rwbs, "WF", 2) == 0)) {',
            "      delete(@fw[args->dev, args->sector]);",
            "      $v = nsecs - ($w >> 1);",
            _BUCKET.rstrip("\n"),
            "      @fh[args->dev, $e, $s] = count();",
            "      @fs[args->dev] = sum($v);",
            "      @fm[args->dev] = max($v);",
            "    }",
        ]
        plain = "  } else if ($t) {"
    lines += [
        plain,
        "    delete(@is[args->dev, args->sector]);",
        "    $v = nsecs - $t;",
        _BUCKET.rstrip("\n"),
        "    @h[args->dev, args->rwbs, $e, $s] = count();",
        "    @ds[args->dev, args->rwbs] = sum($v);",
        "    @dm[args->dev, args->rwbs] = max($v);",
        "  }",
        "}",
        f"interval:ms:{int(tick_ms)} {{",
    ]
    maps = [
        "@h",
        "@ds",
        "@dm",
        *(["@qs", "@qn"] if queue else []),
        *(["@who", "@fh", "@fs", "@fm"] if issuers else []),
    ]
    lines += [f"  print({m}); clear({m});" for m in maps]
    lines += ['  printf("tick %llu\\n", nsecs);', "}"]
    if marked:
        lines.append(
            f"tracepoint:{MARK_TRACEPOINT.replace('/', ':')}"
            f" /pid == {os.getpid()} && args->sig == 0/ {{"
        )
        lines += [f"  print({m}); clear({m});" for m in maps]
        lines += ['  printf("mark %llu\\n", nsecs);', "}"]
    # At exit bpftrace prints every map; the parser ignores anything after the last tick.
    return "\n".join(lines) + "\n"


def dev_t(major: int, minor: int) -> int:
    """The kernel's internal dev_t, as tracepoints report it: ``(major << 20) | minor``."""
    return (major << 20) | minor


def _tracepoints_present() -> bool:
    return any(os.path.isdir(os.path.join(d, "block_rq_issue")) for d in _EVENT_DIRS)


def marker_present() -> bool:
    """Whether the kernel has :data:`MARK_TRACEPOINT` (syscall tracepoints), so frames can
    mark their own ends; without it they wait for the tracer's next tick."""
    return any(os.path.isdir(os.path.join(d, "..", MARK_TRACEPOINT)) for d in _EVENT_DIRS)


def submit_tracepoint() -> str:
    """The first of :data:`ISSUE_TRACEPOINTS` this kernel has (``block_bio_queue`` when it
    cannot tell: every kernel bpftrace runs on has that one)."""
    for name in ISSUE_TRACEPOINTS:
        if any(os.path.isdir(os.path.join(d, name)) for d in _EVENT_DIRS):
            return name
    return ISSUE_TRACEPOINTS[-1]


def tracer_problem() -> tuple[str | None, str | None]:
    """Why the tracer cannot run here (one line), and a one-time notice; (None, ...) when it can.

    Mounts tracefs at :data:`TRACEFS` when the block tracepoints are not visible (as root).
    """
    if os.geteuid() != 0:
        return "latency needs root (it runs bpftrace): start iotop-plus as root", None
    bpftrace = lookup_program("bpftrace")
    if bpftrace.path is None:
        return bpftrace.missing("install it with: apt-get install bpftrace"), None
    setpriv = lookup_program("setpriv")
    if setpriv.path is None:
        return setpriv.missing("install it with: apt-get install util-linux"), None
    if _tracepoints_present():
        return None, None
    mount = lookup_program("mount")
    command = f"mount -t tracefs nodev {TRACEFS}"
    if mount.path is not None:
        done = subprocess.run(
            [mount.path, "-t", "tracefs", "nodev", TRACEFS],
            capture_output=True,
            text=True,
            timeout=10,
            check=False,
        )
        if done.returncode == 0 and _tracepoints_present():
            return None, f"mounted tracefs at {TRACEFS} (the block tracepoints need it)"
    return (
        f"block tracepoints not found (tracefs not mounted?): run as root: {command}",
        None,
    )
