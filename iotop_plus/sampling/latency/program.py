"""The bpftrace program of the latency tracer, and what the kernel offers it.

:func:`tracer_program` is the program text (see :mod:`iotop_plus.sampling.latency.part` for how
frames use it); :func:`tracer_problem`, :func:`marker_present` and
:func:`submit_tracepoint` look at this kernel and host before a tracer starts.
"""

from __future__ import annotations

import contextlib
import functools
import os
import re
from collections.abc import Mapping

from iotop_plus.programs import lookup_program, run_contained
from iotop_plus.sampling.frame.part import TraceProgram
from iotop_plus.sampling.latency.generations import buffered_text, flush_lines
from iotop_plus.sampling.latency.hist import JOB_FLAG

TICK_MS = 250
"""How often the child prints and clears its maps on its own (frames mark their own ends)."""
TRACEFS = "/sys/kernel/tracing"
"""Where tracefs is mounted when it is missing."""
_EVENT_DIRS = (f"{TRACEFS}/events/block", "/sys/kernel/debug/tracing/events/block")
_RWBS_FIELD = re.compile(r"field:char rwbs\[\d+\];\s*offset:(\d+);\s*size:(?:[2-9]|\d\d+);")
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


_PID_BITS = 23
"""Bits of an issuer: a pid (``pid_max`` is at most 2**22) or a kernel job (:data:`JOB_FLAG`)."""
_PID_MASK = (1 << _PID_BITS) - 1
_NS_MASK = (1 << (64 - _PID_BITS)) - 1
"""An attributing tracer's stamp is ``(nsecs mod 2**41) << 23 | issuer``: device times are
taken modulo 2**41 ns (36 minutes), so any shorter one comes out right across the wrap."""
PF_WQ_WORKER = 0x20
"""``task_struct.flags`` bit of a workqueue worker (``include/linux/sched.h``)."""
EXIT_TRACEPOINT = "sched/sched_process_exit"
"""Where an attributing tracer keeps each exiting process's comm (a short-lived issuer is
gone before ``/proc/PID`` is read)."""

DP_UNIT_BITS = 8
"""An attributing tracer sums device time in units of 256 ns (rounded to the nearest)..."""
DP_SHIFT = 36
"""...in the low 36 bits of ``@dp``, and sectors above them: 2**36 units are 4.8 hours of
device time and 2**28 sectors 128 GiB, per device, operation, pid and tick (at most 250 ms
apart), far above any device's."""

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
    errors: bool = False,
    attribution: bool = False,
    rwbs_at: Mapping[str, int] | None = None,
    exits: bool = False,
    jobs: bool = False,
    sample: int = 1,
    timed: bool = True,
    traced: Mapping[str, TraceProgram] | None = None,
) -> str:
    """The bpftrace program (its first line carries :data:`MARKER`, our pid and ``tag``).

    Every printed map, the program's and the parts', is kept in two copies
    (:mod:`~iotop_plus.sampling.latency.generations`): each tick and mark flips which one
    the probes write, then prints and clears the other, all in one group before the
    ``tick``/``mark`` line, so one batch holds one interval of every map.

    ``traced`` (part key -> :class:`~iotop_plus.sampling.frame.part.TraceProgram`): each part's
    probe blocks are appended and its maps printed with the others.
    Without ``timed`` the block probes are left out: the program traces only the parts'
    probes (a part wanted while no view shows latency costs its own probes and nothing more).

    ``marked``: our ``kill(pid, 0)`` (signal 0 from this process, see :meth:`Tracer.mark`)
    also prints and clears the maps, ending with ``mark <nsecs>`` instead of ``tick``.

    ``errors`` (where :func:`errors_present`): failed requests, per device and (negative)
    errno, at ``block_rq_error`` into ``@err[dev, error]`` (device health's I/O errors).

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

    With ``attribution`` (the frame's issuers, while a view wants them) each request is
    charged to the task that submitted it: at ``submit`` its pid is stamped into
    ``@is[dev, sector]``, which the issue then packs with the time (see :data:`_NS_MASK`;
    with ``issuers`` too, the pid waits in ``@ow`` instead), and the submitter's v2 cgroup id
    and comm go to ``@ic[pid, cgroup, comm]`` once per pid and tick (``@id`` says who was
    seen), looked at for one request in 8 (chosen on the sector as in :func:`sample_filter`,
    and every request without sectors): the lookup is a fifth of attribution's cost, and a
    pid that submits at all does so many times (the parser keeps identities across ticks).
    At completion the device-time maps gain the pid as their last key
    (``@h[dev, op, exp, sub, pid]``, ``@dm[dev, op, pid]``), and one sum,
    ``@dp[dev, op, pid]``, holds both the device time and the sectors (:data:`DP_SHIFT`:
    one map operation fewer per request than a sum of each); pid 0: no submission seen (a
    flush the kernel made, or a request in flight when the tracer started). With ``jobs``
    (:func:`jobs_present`), a workqueue worker (:data:`PF_WQ_WORKER`) is charged not by its
    pid but by its job (:data:`~iotop_plus.sampling.latency.hist.JOB_FLAG`), and every other
    task pays one flags test for it: ``@kw[job, function, cgroup, queue]`` names each job
    once per tick (``@kd`` says who was seen), with the address of the work function, the
    id of the cgroup the worker acts for (its kthread's ``blkcg_css``: a loop device's worker
    serving a cgroup's reader; 0 for none) and the address of its workqueue, whose name is
    printed once per queue (``queue <address> <name>``; map keys are numbers only:
    bpftrace 0.17 mishandles char arrays as keys). With ``exits`` too,
    :data:`EXIT_TRACEPOINT` adds each exiting process's comm to ``@ic``.

    ``rwbs_at`` (:func:`rwbs_offsets`): where each tracepoint's ``rwbs`` field sits, so
    the maps are keyed by its first two bytes as one number (``*(uint16 *)``) instead of
    the string; tracepoints not in it keep the string key.

    ``sample`` (a power of two, :func:`sample_filter`): every block probe keeps one request
    in ``sample``, chosen on a hash of ``sector >> 3``, so the others cost one filter test.
    Counts and sums then weigh each kept request with sectors ``sample`` times (``$n``) and
    each without once (all of those are kept): the maps are estimates of all requests, and
    the percentiles an unbiased sample.
    """
    only = sample_filter(only_dev, sample)
    lines: list[str] = []
    if timed:
        lines += _timed_probes(
            queue=queue,
            issuers=issuers,
            submit=submit,
            only=only,
            attribution=attribution,
            rwbs_at=rwbs_at,
            sample=sample,
            jobs=jobs,
        )
    if attribution and exits and timed:
        lines.append(
            f"tracepoint:{EXIT_TRACEPOINT.replace('/', ':')} /pid == tid/"
            " { @ic[pid, cgroup, comm] = count(); }"
        )
    if errors:
        lines.append("tracepoint:block:block_rq_error { @err[args->dev, args->error] = count(); }")
    maps = [
        *(["@h", "@dp" if attribution else "@ds", "@dm"] if timed else []),
        *(["@err"] if errors else []),
        *(["@qs", "@qn"] if queue and timed else []),
        *(["@who", "@fh", "@fs", "@fm"] if issuers and timed else []),
        *(["@ic"] if attribution and timed else []),
        *(["@kw"] if attribution and jobs and timed else []),
    ]
    lines = [f"// {MARKER} pid={os.getpid()} {tag}".rstrip(), buffered_text("\n".join(lines), maps)]
    parts = list((traced or {}).values())
    for program in parts:
        lines.append(buffered_text(program.text, program.maps).strip("\n"))
    cleared = ["  clear(@id);"] if attribution and timed else []
    cleared += ["  clear(@kd);"] if attribution and jobs and timed else []
    flushed = [*flush_lines([*maps, *(m for p in parts for m in p.maps)]), *cleared]
    lines.append(f"interval:ms:{int(tick_ms)} {{")
    lines += [*flushed, '  printf("tick %llu\\n", nsecs);', "}"]
    if marked:
        lines.append(
            f"tracepoint:{MARK_TRACEPOINT.replace('/', ':')}"
            f" /pid == {os.getpid()} && args->sig == 0/ {{"
        )
        lines += [*flushed, '  printf("mark %llu\\n", nsecs);', "}"]
    # At exit bpftrace prints every map; the parser ignores anything after the last tick.
    return "\n".join(lines) + "\n"


def _timed_probes(
    *,
    queue: bool,
    issuers: bool,
    submit: str,
    only: str,
    attribution: bool,
    rwbs_at: Mapping[str, int] | None,
    sample: int,
    jobs: bool = False,
) -> list[str]:
    """The block probes that time requests (see :func:`tracer_program`)."""
    lines: list[str] = []
    if queue:
        lines.append(
            f"tracepoint:block:block_rq_insert{only} {{ @iq[args->dev, args->sector] = nsecs; }}"
        )
    packed = attribution and not issuers  # the issuer rides in the request's stamp
    lines += _submit_probe(
        f"tracepoint:block:{submit}{only}", issuers, attribution, packed, sample, jobs
    )
    lines.append(f"tracepoint:block:block_rq_issue{only} {{")
    if issuers:
        lines.append("  if (args->nr_sector) { @is[args->dev, args->sector] = nsecs; }")
    elif packed:
        lines += [
            f"  $p = @is[args->dev, args->sector] & {_PID_MASK};",
            f"  @is[args->dev, args->sector] = ((nsecs & {_NS_MASK}) << {_PID_BITS}) | $p;",
        ]
    else:
        lines.append("  @is[args->dev, args->sector] = nsecs;")
    if queue:
        lines += [
            "  $t = @iq[args->dev, args->sector];",
            "  if ($t) {",
            "    delete(@iq[args->dev, args->sector]);",
            f"    $o = {_op('block_rq_issue', rwbs_at)};",
            *(_weighed("    ", "args->nr_sector", sample)),
            f"    @qs[args->dev, $o] = sum({_times('nsecs - $t', sample)});",
            f"    @qn[args->dev, $o] = {_count(sample)};",
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
            "      $v = nsecs - ($w >> 2);",
            *(_weighed("      ", "$w & 2", sample)),
            _BUCKET.rstrip("\n"),
            f"      @fh[args->dev, $e, $s] = {_count(sample)};",
            f"      @fs[args->dev] = sum({_times('$v', sample)});",
            "      @fm[args->dev] = max($v);",
            "    }",
        ]
        plain = "  } else if ($t) {"
    op = _op("block_rq_complete", rwbs_at)
    by = ""
    if packed:  # submitted-only stamps (no time yet) are dropped, not timed
        lines += [
            "  if ($t) { delete(@is[args->dev, args->sector]); }",
            f"  if ($t > {_PID_MASK}) {{",
            f"    $v = ((nsecs & {_NS_MASK}) - ($t >> {_PID_BITS})) & {_NS_MASK};",
            f"    $p = $t & {_PID_MASK};",
        ]
    else:
        lines += [plain, "    delete(@is[args->dev, args->sector]);", "    $v = nsecs - $t;"]
    if op != "args->rwbs":  # read once, used three times
        lines.append(f"    $o = {op};")
        op = "$o"
    lines.append(_BUCKET.rstrip("\n"))
    lines += _weighed("    ", "args->nr_sector", sample)
    if attribution:
        by = ", $p"
    if attribution and not packed:
        lines += [
            "    $p = @ow[args->dev, args->sector];",
            "    if ($p) { delete(@ow[args->dev, args->sector]); }",
        ]
    packed_sum = (
        f"(($v + {1 << (DP_UNIT_BITS - 1)}) >> {DP_UNIT_BITS}) | (args->nr_sector << {DP_SHIFT})"
    )
    lines += [
        f"    @h[args->dev, {op}, $e, $s{by}] = {_count(sample)};",
        f"    @dp[args->dev, {op}{by}] = sum({_times(packed_sum, sample)});"
        if attribution
        else f"    @ds[args->dev, {op}] = sum({_times('$v', sample)});",
        f"    @dm[args->dev, {op}{by}] = max($v);",
        "  }",
        "}",
    ]
    return lines


SAMPLE_HASH = 2654435761
"""Knuth's multiplicative hash (2**32 / golden ratio): its top bits of ``(sector >> 3) * it``
spread 4k-aligned, sequential and random sectors alike over the sample classes."""
SAMPLE_MAX = 256
"""The sparsest sampling: one request in 256."""


def sample_filter(only_dev: int | None, sample: int) -> str:
    """The block probes' filter: only ``only_dev`` (when given) and, with ``sample`` above 1,
    one request in ``sample``: those whose ``sector >> 3`` (a 4k block: 4k-aligned sectors
    have their low three bits zero) hashes to 0 mod ``sample`` (:data:`SAMPLE_HASH`, top bits
    of the 32-bit product). The choice depends on the sector alone, never on the time a
    request takes, so the timed ones are an unbiased sample, and the same request is chosen
    at submission, insert, issue and completion. Requests without sectors (a preflush, the
    end of a flush sequence) are always kept: they all sit at one sector."""
    if sample < 1 or sample > SAMPLE_MAX or sample & (sample - 1):
        raise ValueError(f"sample must be a power of two from 1 to {SAMPLE_MAX}, not {sample}")
    tests = [f"args->dev == {int(only_dev)}"] if only_dev is not None else []
    if sample > 1:
        bits = sample.bit_length() - 1
        tests.append(
            f"(args->nr_sector == 0 || ((((args->sector >> 3) * {SAMPLE_HASH}) >> {32 - bits})"
            f" & {sample - 1}) == 0)"
        )
    return f" /{' && '.join(tests)}/" if tests else ""


def sample_kept(sector: int, nr_sector: int, sample: int) -> bool:
    """Whether :func:`sample_filter` keeps a request (the same arithmetic, in Python)."""
    if sample <= 1 or nr_sector == 0:
        return True
    bits = sample.bit_length() - 1
    return (((sector >> 3) * SAMPLE_HASH) >> (32 - bits)) & (sample - 1) == 0


def _weighed(indent: str, has_sectors: str, sample: int) -> list[str]:
    """``$n``, the weight of a kept request (see :func:`tracer_program`); none unsampled."""
    return [f"{indent}$n = ({has_sectors}) ? {int(sample)} : 1;"] if sample > 1 else []


def _count(sample: int) -> str:
    return "count()" if sample == 1 else "sum($n)"


def _times(value: str, sample: int) -> str:
    return value if sample == 1 else f"({value}) * $n"


def _submit_probe(
    probe: str,
    issuers: bool,
    attribution: bool,
    packed: bool,
    sample: int = 1,
    jobs: bool = False,
) -> list[str]:
    """The probe at submission (none unless ``issuers`` or ``attribution``): see
    :func:`tracer_program`. Sampled (``sample`` above 1), ``@who`` adds ``sample`` for each
    request with sectors that :func:`sample_filter` kept and 1 for each without (all of
    which it keeps), so its counts are estimates of all requests."""
    if not issuers and not attribution:
        return []
    lines = [f"{probe} {{"]
    if attribution:
        owner = "@is" if packed else "@ow"
        lines += [
            "  $p = (uint64)pid;",
            *([f"  if (curtask->flags & {PF_WQ_WORKER}) {{", *_job_lines("    ")] if jobs else []),
            ("  } else if" if jobs else "  if") + " (args->nr_sector == 0 ||",
            f"      ((((args->sector >> 3) * {SAMPLE_HASH}) >> 29) & 7) == 0) {{",
            "    if (@id[pid] == 0) { @id[pid] = 1; @ic[pid, cgroup, comm] = count(); }",
            "  }",
            f"  {owner}[args->dev, args->sector] = $p;",
        ]
    if issuers:
        lines += [
            "  @who[args->dev, pid, comm] = count();"
            if sample == 1
            else f"  @who[args->dev, pid, comm] = sum(args->nr_sector ? {int(sample)} : 1);",
            '  if (strncmp(args->rwbs, "FW", 2) == 0) {',
            "    @fw[args->dev, args->sector] = (nsecs << 2) | (args->nr_sector ? 3 : 1);",
            '  } else if (strncmp(args->rwbs, "WF", 2) == 0) {',
            "    @fw[args->dev, args->sector] = (nsecs << 2) | (args->nr_sector ? 2 : 0);",
            "  }",
        ]
    return [*lines, "}"]


def _job_lines(indent: str) -> list[str]:
    """A worker's job as its issuer ``$p`` (:data:`JOB_FLAG`), named in ``@kw`` at its
    first request in the tick: the BTF chain ``kthread -> worker -> current_func``."""
    job_mask = JOB_FLAG - 1
    return [
        f"{indent}{line}"
        for line in (
            "$k = (struct kthread *)curtask->worker_private;",
            "$w = (struct worker *)$k->data;",
            "$f = (uint64)$w->current_func;",
            f"$p = {JOB_FLAG} | (((($f ^ (uint64)$w->current_work) * {SAMPLE_HASH}) >> 20)"
            f" & {job_mask});",
            "if (@kd[$p] == 0) {",
            "  @kd[$p] = 1;",
            "  $g = (uint64)0;",
            "  if ((uint64)$k->blkcg_css != 0) { $g = $k->blkcg_css->cgroup->kn->id; }",
            "  $q = (uint64)$w->current_pwq->wq;",
            "  @kw[$p, $f, $g, $q] = count();",
            "  if (@kq[$q] == 0) {",
            "    @kq[$q] = 1;",
            '    printf("queue %llu %s\\n", $q, $w->current_pwq->wq->name);',
            "  }",
            "}",
        )
    ]


def _op(event: str, rwbs_at: Mapping[str, int] | None) -> str:
    """The key of a request's operation at ``event``: the first two bytes of ``rwbs`` as
    one number where its offset is known (a smaller key than the string), else the string."""
    offset = rwbs_at.get(event) if rwbs_at is not None else None
    if offset is None:
        return "args->rwbs"
    return f"*(uint16 *)((uint64)args + {int(offset)})"


def rwbs_offsets(events: tuple[str, ...]) -> dict[str, int]:
    """Where the ``rwbs`` field of each block tracepoint in ``events`` sits (from its
    tracefs ``format``: ``field:char rwbs[10]; offset:34;...``); events whose format
    cannot be read, or says something else, are left out (their maps keep the string)."""
    out: dict[str, int] = {}
    for event in events:
        for base in _EVENT_DIRS:
            try:
                with open(os.path.join(base, event, "format"), encoding="ascii") as f:
                    text = f.read(8192)
            except (OSError, UnicodeDecodeError):
                continue
            found = _RWBS_FIELD.search(text)
            if found is not None:
                out[event] = int(found.group(1))
            break
    return out


def exits_present() -> bool:
    """Whether the kernel has :data:`EXIT_TRACEPOINT` (every process's exit)."""
    return any(os.path.isdir(os.path.join(d, "..", EXIT_TRACEPOINT)) for d in _EVENT_DIRS)


JOBS_SINCE = (5, 17)
"""The first kernel whose ``task_struct`` has ``worker_private`` (a kthread's own struct)."""


@functools.cache
def jobs_present() -> bool:
    """Whether the BTF chain to a worker's job is there: kernel BTF, ``worker_private``
    (:data:`JOBS_SINCE`) and the blk cgroups (``kthread.blkcg_css``, with ``blkio`` in
    ``/proc/cgroups``). Without it workers are charged by pid (their I/O is ``other``)."""
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        return False
    found = re.match(r"(\d+)\.(\d+)", os.uname().release)
    if found is None or (int(found.group(1)), int(found.group(2))) < JOBS_SINCE:
        return False
    try:
        with open("/proc/cgroups", encoding="ascii", errors="replace") as f:
            return any(line.split()[:1] == ["blkio"] for line in f.read(65536).splitlines())
    except OSError:
        return False


def dev_t(major: int, minor: int) -> int:
    """The kernel's internal dev_t, as tracepoints report it: ``(major << 20) | minor``."""
    return (major << 20) | minor


def _tracepoints_present() -> bool:
    return any(os.path.isdir(os.path.join(d, "block_rq_issue")) for d in _EVENT_DIRS)


def marker_present() -> bool:
    """Whether the kernel has :data:`MARK_TRACEPOINT` (syscall tracepoints), so frames can
    mark their own ends; without it they wait for the tracer's next tick."""
    return any(os.path.isdir(os.path.join(d, "..", MARK_TRACEPOINT)) for d in _EVENT_DIRS)


def errors_present() -> bool:
    """Whether the kernel has ``block_rq_error`` (failed requests; Linux 5.13 and later)."""
    return any(os.path.isdir(os.path.join(d, "block_rq_error")) for d in _EVENT_DIRS)


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
        with contextlib.suppress(OSError):
            done = run_contained([mount.path, "-t", "tracefs", "nodev", TRACEFS], timeout=10)
            if done.returncode == 0 and _tracepoints_present():
                return None, f"mounted tracefs at {TRACEFS} (the block tracepoints need it)"
    return (
        f"block tracepoints not found (tracefs not mounted?): run as root: {command}",
        None,
    )
