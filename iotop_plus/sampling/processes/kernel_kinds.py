"""What the kernel's own I/O on a device is for: the kind of each kernel issuer entry.

The tracer charges a workqueue worker's request to its job (the work function, the cgroup
its kthread acts for, its workqueue: :class:`~iotop_plus.sampling.latency.hist.KernelJob`);
kernel threads that are not workers are charged by pid. Kinds:

* ``writeback``: the flusher (``wb_workfn``), for the device it writes to;
* ``loop``: a loop device's worker (``loop_workfn``, ``loop_rootcg_workfn``) reading or
  writing its backing file, for that loop device (its workqueue ``loopN``) and the cgroup of
  the reader it serves (the kthread's ``blkcg_css``);
* ``throttle``: a throttle's delayed dispatch (``blk_throtl_dispatch_work_fn``), for the
  device and the cgroup limited on it (null when none or several are);
* ``journal``: a ``jbd2/NAME-INO`` kernel thread, for the device ``NAME``;
* ``other``: anything else (requests with no submission seen, other workers and threads).

Function addresses are named from ``/proc/kallsyms`` (root only: without it every job is
``other``); cgroup ids are the inode numbers of the blk cgroup hierarchy's directories.
"""

from __future__ import annotations

import os
import re
import time
from dataclasses import dataclass
from typing import Any, Protocol

from iotop_plus.roots import Roots

WRITEBACK = "writeback"
LOOP = "loop"
THROTTLE = "throttle"
JOURNAL = "journal"
OTHER = "other"
KINDS = (WRITEBACK, LOOP, THROTTLE, JOURNAL, OTHER)
"""Every kind, in the order entries of equal I/O are listed."""
KIND_OF_FUNCTION = {
    "wb_workfn": WRITEBACK,
    "loop_workfn": LOOP,
    "loop_rootcg_workfn": LOOP,
    "blk_throtl_dispatch_work_fn": THROTTLE,
}
"""Work functions whose I/O has a kind of its own (kernel names, ``fs/fs-writeback.c``,
``drivers/block/loop.c``, ``block/blk-throttle.c``)."""
JOURNAL_PREFIX = "jbd2/"
"""The comm of a jbd2 journal thread: ``jbd2/vda1-8`` (device, then the journal's inode)."""
RESCAN_S = 30.0
"""An address or cgroup id not found is looked for again at most this often."""
MAX_CGROUP_DIRS = 100_000
"""A walk of the cgroup tree stops after this many directories."""
_LOOP_QUEUE = re.compile(r"loop\d+")


class KernelJob(Protocol):
    """A worker's job as the tracer names it (the latency reader's ``KernelJob``)."""

    @property
    def function(self) -> int:
        """The work function's kernel address."""
        ...

    @property
    def cgroup_id(self) -> int:
        """The id of the blk cgroup the worker acted for (0: none)."""
        ...

    @property
    def queue(self) -> str:
        """Its workqueue's name."""
        ...


@dataclass(frozen=True)
class KernelWork:
    """What one kernel issuer entry's I/O is: its kind and whom it is for."""

    kind: str
    """One of :data:`KINDS`."""
    device: str | None
    """The device the I/O is for (a loop device for ``loop``, the journal's for ``journal``)."""
    cgroup: str | None
    """The cgroup it acts for (``loop``, ``throttle``), when known."""


class KernelKinds:
    """Names kernel I/O: function addresses and cgroup ids, each looked up once (cached)."""

    def __init__(self, roots: Roots) -> None:
        self.roots = roots
        self._functions: dict[int, str] = {}
        self._functions_at = float("-inf")
        self._unknown: set[int] = set()
        self._cgroups: dict[int, str] = {}
        self._cgroups_at = float("-inf")
        self._missed: set[int] = set()

    def of_job(
        self,
        job: KernelJob | None,
        device: str,
        limited: tuple[str, ...] = (),
        now: float | None = None,
    ) -> KernelWork:
        """The kind of a worker's job on ``device`` (``limited``: the cgroups with a limit
        on it, for a throttle's dispatch)."""
        if job is None:
            return KernelWork(OTHER, device, None)
        now = time.monotonic() if now is None else now
        kind = KIND_OF_FUNCTION.get(self._function(job.function, now) or "", OTHER)
        if kind == LOOP:
            queue = job.queue if _LOOP_QUEUE.fullmatch(job.queue) else None
            return KernelWork(LOOP, queue, self._cgroup(job.cgroup_id, now))
        if kind == THROTTLE:
            return KernelWork(THROTTLE, device, limited[0] if len(limited) == 1 else None)
        return KernelWork(kind, device, None)

    @staticmethod
    def of_thread(comm: str | None, device: str) -> KernelWork:
        """The kind of a kernel thread's (not a worker's) I/O on ``device``."""
        if comm and comm.startswith(JOURNAL_PREFIX):
            name = comm[len(JOURNAL_PREFIX) :].rpartition("-")[0]
            return KernelWork(JOURNAL, name or None, None)
        return KernelWork(OTHER, device, None)

    def _function(self, address: int, now: float) -> str | None:
        """The name of a work function with a kind (None: another one). ``/proc/kallsyms``
        (0.1 s to read) is read again only while a name is missing (a module not loaded
        at the last read), for an address not seen before, at most every :data:`RESCAN_S`."""
        found = self._functions.get(address)
        if (
            found is None
            and address not in self._unknown
            and len(set(self._functions.values())) < len(KIND_OF_FUNCTION)
            and now - self._functions_at >= RESCAN_S
        ):
            self._functions_at = now
            self._functions = read_functions(self.roots, frozenset(KIND_OF_FUNCTION))
            found = self._functions.get(address)
        if found is None and len(self._unknown) < MAX_CGROUP_DIRS:
            self._unknown.add(address)
        return found

    def _cgroup(self, cgroup_id: int, now: float) -> str | None:
        """The path of a blk cgroup id: the tree is walked again for an id not looked for
        before (a cgroup made since the last walk), else at most every :data:`RESCAN_S`."""
        if cgroup_id == 0:
            return "/"
        found = self._cgroups.get(cgroup_id)
        new = cgroup_id not in self._missed
        if found is None and (new or now - self._cgroups_at >= RESCAN_S):
            self._cgroups_at = now
            self._cgroups = cgroup_paths(blk_cgroup_root(self.roots))
            found = self._cgroups.get(cgroup_id)
            if found is None and len(self._missed) < MAX_CGROUP_DIRS:
                self._missed.add(cgroup_id)
        return found


def read_functions(roots: Roots, names: frozenset[str]) -> dict[int, str]:
    """Address -> name of the kernel functions ``names`` (``/proc/kallsyms``: ``ADDR t NAME``
    or ``ADDR t NAME [module]``); empty when unreadable or the addresses are hidden (0)."""
    out: dict[int, str] = {}
    try:
        with open(roots.proc / "kallsyms", encoding="ascii", errors="replace") as f:
            for line in f:
                fields = line.split()
                if len(fields) >= 3 and fields[2] in names:
                    try:
                        address = int(fields[0], 16)
                    except ValueError:
                        continue
                    if address:
                        out[address] = fields[2]
    except OSError:
        return {}
    return out


def blk_cgroup_root(roots: Roots) -> str:
    """The hierarchy the blk cgroups live in: v1 ``blkio`` where mounted, else the v2 root."""
    base = roots.sys / "fs" / "cgroup"
    blkio = base / "blkio"
    if (blkio / "blkio.throttle.io_service_bytes").is_file():
        return str(blkio)
    return str(base)


def cgroup_paths(root: str) -> dict[int, str]:
    """Directory inode (a cgroup's id) -> its path under ``root`` (``/`` for the root)."""
    try:
        out = {os.stat(root).st_ino: "/"}
    except OSError:
        return {}
    stack = [("", root)]
    while stack and len(out) < MAX_CGROUP_DIRS:
        rel, path = stack.pop()
        try:
            with os.scandir(path) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        child = f"{rel}/{entry.name}"
                        out[entry.inode()] = child
                        stack.append((child, entry.path))
        except OSError:
            continue
    return out


def limited_cgroups(frame: Any, device_number: str) -> tuple[str, ...]:
    """The cgroups with a limit on ``device_number`` (``MAJ:MIN``) in a cgroup part's value
    (the frame's cgroups, or the throttle watch's limited cgroups), sorted; () without one."""
    cgroups: Any = getattr(getattr(frame, "sample", None), "cgroups", None)
    if not hasattr(cgroups, "items"):
        return ()
    found = []
    for path, stat in cgroups.items():
        limits = getattr(stat, "limits", None)
        keys = getattr(limits, "max", None) or {}
        if any(v is not None for v in (keys.get(device_number) or {}).values()):
            found.append(str(path))
    return tuple(sorted(found))
