"""What a probe may touch, and how: the safety rules in one place
(docs/ARCHITECTURE.md, "What the code relies on").

* Check a thing, then use that same thing. The typed path is resolved once. A device is
  opened as its canonical ``/dev/NAME`` (``st_rdev`` verified on the descriptor), and every
  check reads that descriptor; fio gets ``/proc/self/fd/N``. A directory gets a private 0700
  subdirectory made through a descriptor (:mod:`iotop_plus.probe.workdir`); fio gets
  ``/proc/self/fd/N/iotop-plus-probe-...``, sized from the free space, removed whatever happens.
* A missing directory is refused: fio would create it (and its parents) silently.
* A block device target runs read-only presets, and fio always gets ``--readonly``.
* A write preset on a raw device is refused while anything uses the device or its partitions
  (mount, swap, holder, an opener, a filesystem or partition-table signature); otherwise the
  user must type the device's name to confirm. A confirmed write probe holds the device
  with ``O_EXCL`` until fio has exited: a ``mount`` or ``mkfs`` meanwhile gets EBUSY.

:func:`plan_target` and :func:`open_target` block (blkid, a scan of every process's fds):
call them from a worker thread, never from a UI loop. They assume no event loop.
"""

from __future__ import annotations

import errno
import os
import stat
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from types import TracebackType

from iotop_plus.probe.presets import Preset, ProbeParams
from iotop_plus.probe.signatures import signatures
from iotop_plus.probe.workdir import (
    ProbeWorkdir,
    WorkdirError,
    live_workdirs,
    remove_all_workdirs,
    remove_leftovers,
)
from iotop_plus.roots import Roots
from iotop_plus.sampling.topology.blockdev import device_name, fd_paths, read_dev_numbers
from iotop_plus.sampling.topology.inventory import read_inventory

#: A probe file never takes more than this share of the free space.
FREE_SPACE_FRACTION = 0.25
#: Below this a probe measures nothing useful.
MIN_PROBE_BYTES = 16 * 1024 * 1024


class TargetError(Exception):
    """The target may not be probed this way; the message is one plain line."""


class ConfirmationNeeded(TargetError):
    """A write probe on an unused raw device: the user must type the device's name."""

    def __init__(self, device: str) -> None:
        super().__init__(
            f"writing to /dev/{device} destroys its contents: type the device name "
            f"{device!r} to confirm"
        )
        self.device = device


@dataclass(frozen=True)
class ProbeTarget:
    """Where a probe runs, checked against the safety rules."""

    kind: str
    """``file`` (a probe file in a directory) or ``device`` (a raw block device)."""
    directory: Path | None
    """The directory for a file target."""
    device_path: Path | None
    """``/dev/NAME`` for a device target (the canonical node, whatever was typed)."""
    device: str | None
    """Kernel name of the block device measured (for a directory: the one holding it, if
    any), used for its settings and the live iostat line."""
    size_bytes: int
    """Bytes fio may use: the probe file's size, or the span of the device."""
    readonly: bool
    """fio gets ``--readonly`` (always for a device unless a write was confirmed)."""
    note: str | None = None
    """Why the size is smaller than asked, or what was cleaned up first, when anything."""

    @property
    def label(self) -> str:
        """Where the probe runs, for people."""
        if self.kind == "device":
            return str(self.device_path)
        on = f" (on {self.device})" if self.device else ""
        return f"{self.directory}{on}"


class CheckedTarget:
    """A target that passed the checks, held open: fio gets what was checked, nothing else.

    Use as a context manager (or call :meth:`close`): the descriptors are closed and the
    probe directory removed whatever happens.
    """

    def __init__(self, target: ProbeTarget, fd: int, workdir: ProbeWorkdir | None = None) -> None:
        self.target = target
        """The checked target."""
        self.fd = fd
        """The device's descriptor, or the chosen directory's."""
        self.workdir = workdir
        """The private probe directory of a directory target."""

    @property
    def fio_filename(self) -> str:
        """fio's ``--filename``: always through a descriptor of ours."""
        if self.workdir is not None:
            return self.workdir.fio_filename
        return f"/proc/self/fd/{self.fd}"

    @property
    def pass_fds(self) -> tuple[int, ...]:
        """Descriptors fio must inherit for :attr:`fio_filename` to work."""
        return (self.workdir.fd,) if self.workdir is not None else (self.fd,)

    def verify(self) -> None:
        """Check, once fio has started, that it writes what was checked.

        Raises:
            TargetError: the probe file is not the regular file of ours fio made.
        """
        if self.workdir is not None:
            why = self.workdir.check_probe_file()
            if why:
                raise TargetError(f"{why} in {self.workdir.parent}: probe aborted")

    def close(self) -> None:
        """Remove the probe directory and close every descriptor; idempotent."""
        if self.workdir is not None:
            self.workdir.remove()
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def __enter__(self) -> CheckedTarget:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


def device_of_dev_t(roots: Roots, dev: int) -> str | None:
    """Kernel name of the block device with this ``st_dev``/``st_rdev``, or None."""
    return device_name(roots, os.major(dev), os.minor(dev))


def plan_target(
    text: str,
    preset: Preset,
    params: ProbeParams,
    roots: Roots,
    *,
    confirm: str | None = None,
) -> ProbeTarget:
    """Check ``text`` (a directory or a block device path) for this preset.

    Nothing is created here and nothing stays open. Blocks: call it from a worker thread.

    Raises:
        TargetError: one line saying why the target is refused.
        ConfirmationNeeded: a write preset on an unused device without the typed name.
    """
    with open_target(text, preset, params, roots, confirm=confirm, make_workdir=False) as t:
        return t.target


def open_target(
    text: str,
    preset: Preset,
    params: ProbeParams,
    roots: Roots,
    *,
    confirm: str | None = None,
    make_workdir: bool = True,
) -> CheckedTarget:
    """Resolve ``text`` once, check it, and hold it open for fio.

    A directory target first loses the leftovers of dead probes, is then sized from the free
    space, and gets its private probe directory (unless ``make_workdir`` is false).
    Blocks: call it from a worker thread.

    Raises:
        TargetError: one line saying why the target is refused.
        ConfirmationNeeded: a write preset on an unused device without the typed name.
    """
    path = _typed_path(text)
    try:
        # O_PATH: resolve the typed name exactly once, open nothing (a FIFO cannot block).
        opath = os.open(path, os.O_PATH | os.O_CLOEXEC)
    except FileNotFoundError:
        raise TargetError(
            f"target {path} does not exist (a probe never creates directories)"
        ) from None
    except OSError as exc:
        raise TargetError(f"cannot use target {path}: {exc.strerror}") from None
    try:
        st = os.fstat(opath)
        if stat.S_ISDIR(st.st_mode):
            return _open_directory(path, opath, params, roots, make_workdir)
    finally:
        os.close(opath)  # before the device checks: our own openers must not count
    if stat.S_ISBLK(st.st_mode):
        return _open_device(path, st, preset, params, roots, confirm)
    raise TargetError(
        f"target {path} is neither a directory nor a block device "
        "(a probe never writes to an existing file)"
    )


def _typed_path(text: str) -> Path:
    text = text.strip()
    if not text:
        raise TargetError("no target: give a directory (a probe file is made in it) or a device")
    path = Path(text).expanduser()
    return path if path.is_absolute() else Path.cwd() / path


def _open_directory(
    path: Path, opath: int, params: ProbeParams, roots: Roots, make_workdir: bool
) -> CheckedTarget:
    fd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC, dir_fd=opath)
    try:
        if not os.access(".", os.W_OK | os.X_OK, dir_fd=fd, effective_ids=True):
            raise TargetError(f"cannot write in {path}: permission denied")
        notes = []
        floor = 0
        if make_workdir:
            before = os.fstatvfs(fd)
            removed, freed = remove_leftovers(fd)
            if freed:
                floor = before.f_bavail * before.f_frsize + freed
            if removed:
                notes.append(
                    f"removed {removed} leftover probe director{'y' if removed == 1 else 'ies'}"
                    f" of a killed run ({freed // 2**20} MiB)"
                )
        target = _size_directory(path, fd, params, roots, floor)
        if notes:
            target = replace(target, note="; ".join(filter(None, [*notes, target.note])))
        workdir = None
        if make_workdir:
            try:
                workdir = ProbeWorkdir(fd, path)
            except WorkdirError as exc:
                raise TargetError(str(exc)) from None
        return CheckedTarget(target, fd, workdir)
    except BaseException:
        os.close(fd)
        raise


def _size_directory(
    path: Path, fd: int, params: ProbeParams, roots: Roots, floor: int = 0
) -> ProbeTarget:
    """Size the probe file from the free space, or from ``floor`` when that is more.

    ``floor`` is the free space before removing leftovers plus what they held: their space
    can come back a moment after the unlink, while a killed fio's last thread closes them.
    """
    try:
        vfs = os.fstatvfs(fd)
    except OSError as exc:
        raise TargetError(f"cannot read free space of {path}: {exc.strerror}") from None
    free = max(vfs.f_bavail * vfs.f_frsize, min(floor, vfs.f_blocks * vfs.f_frsize))
    wanted = params.size_mb * 1024 * 1024
    cap = int(free * FREE_SPACE_FRACTION)
    size = min(wanted, cap)
    size -= size % max(params.bs_bytes, 4096)
    if size < max(MIN_PROBE_BYTES, params.bs_bytes):
        raise TargetError(
            f"not enough free space in {path}: {free // 2**20} MiB free, a probe needs "
            f"{MIN_PROBE_BYTES // 2**20} MiB within {int(FREE_SPACE_FRACTION * 100)}% of it"
        )
    note = None
    if size < wanted:
        note = (
            f"probe file capped to {size // 2**20} MiB "
            f"({int(FREE_SPACE_FRACTION * 100)}% of {free // 2**20} MiB free)"
        )
    st_dev = os.fstat(fd).st_dev
    return ProbeTarget(
        "file", path, None, device_of_dev_t(roots, st_dev), size, readonly=False, note=note
    )


def open_device(name: str, rdev: int, flags: int = os.O_RDONLY) -> int:
    """Open the canonical ``/dev/NAME`` and check it is the block device ``rdev``.

    Raises:
        TargetError: it cannot be opened (a refusal says whose it is to lift) or is another
            device; with ``O_EXCL``, EBUSY says the device is busy.
    """
    dev_path = f"/dev/{name}"
    try:
        fd = os.open(dev_path, flags | os.O_NOFOLLOW | os.O_CLOEXEC)
    except PermissionError:
        raise TargetError(_refused_open(dev_path, flags)) from None
    except OSError as exc:
        if exc.errno == errno.EBUSY and flags & os.O_EXCL:
            raise TargetError(
                f"refusing to write to {dev_path}: it is busy (mounted, or claimed by the "
                "kernel or another program)"
            ) from None
        raise TargetError(f"cannot open {dev_path}: {exc.strerror}") from None
    st = os.fstat(fd)
    if not stat.S_ISBLK(st.st_mode) or st.st_rdev != rdev:
        os.close(fd)
        raise TargetError(
            f"{dev_path} is not the device checked ({os.major(rdev)}:{os.minor(rdev)})"
        )
    return fd


def _refused_open(dev_path: str, flags: int) -> str:
    """Why opening ``dev_path`` failed with EPERM or EACCES, and what can be done about it.

    Root is refused only by something above file permissions (a container's device cgroup, a
    seccomp filter, a security module): "run as root" would be wrong advice there.
    """
    if os.geteuid() == 0:
        return (
            f"the kernel refused to open {dev_path} (a sandbox or security module, not a "
            "permission you can grant)"
        )
    how = "writing" if flags & (os.O_RDWR | os.O_WRONLY) else "reading"
    return (
        f"cannot open {dev_path} for {how}: permission denied (run as root, or as a user "
        "with access to the device)"
    )


def _open_device(
    path: Path,
    st: os.stat_result,
    preset: Preset,
    params: ProbeParams,
    roots: Roots,
    confirm: str | None,
) -> CheckedTarget:
    """Check a device target, in this order, and hold it for fio.

    Refusals that need no descriptor come first (mounts, swaps, holders, partitions,
    read-only), so a mounted device is named as such even where the kernel would not let us
    open it. Then signatures and openers are read through a plain descriptor. A write probe
    finally claims the device with ``O_RDWR|O_EXCL`` and holds that claim until fio has
    exited: a ``mount`` or ``mkfs`` meanwhile gets EBUSY.
    """
    name = device_of_dev_t(roots, st.st_rdev)
    if name is None:
        raise TargetError(f"{path} is not a block device known to sysfs")
    try:
        sectors = int((roots.sys_class_block / name / "size").read_text())
    except (OSError, ValueError):
        sectors = 0
    if sectors <= 0:
        raise TargetError(f"{path} has no media (size 0)")
    span = min(sectors * 512, params.size_mb * 1024 * 1024)
    span -= span % params.bs_bytes
    if span < params.bs_bytes:
        raise TargetError(f"{path} is smaller than one block of {params.bs}")
    dev_path = Path("/dev") / name
    if preset.writes:
        _refuse(dev_path, in_use_without_descriptor(roots, name))
    fd = open_device(name, st.st_rdev)
    if not preset.writes:
        return CheckedTarget(ProbeTarget("device", None, dev_path, name, span, readonly=True), fd)
    try:
        _refuse(dev_path, device_in_use(roots, name, fd))
    finally:
        os.close(fd)  # our own plain descriptor must not stand in the way of the claim
    claim = open_device(name, st.st_rdev, os.O_RDWR | os.O_EXCL)
    try:
        # Whatever was written between the checks and the claim: read it again, held.
        _refuse(dev_path, [f"{name} holds {sig}" for sig in signatures(claim)])
        if confirm != name:
            raise ConfirmationNeeded(name)
        return CheckedTarget(
            ProbeTarget("device", None, dev_path, name, span, readonly=False), claim
        )
    except BaseException:
        os.close(claim)
        raise


def _refuse(dev_path: Path, reasons: list[str]) -> None:
    if reasons:
        raise TargetError(
            f"refusing to write to {dev_path}: "
            + "; ".join(reasons)
            + " (pick a directory instead)"
        )


def in_use_without_descriptor(roots: Roots, name: str) -> list[str]:
    """What sysfs and the mount and swap tables say uses the device or its partitions:
    mounts, swap, holders, partitions, read-only. Needs no descriptor of the device."""
    inventory = read_inventory(roots, use_udev=False)
    reasons = list(inventory.in_use_reasons(name))
    dev = inventory.get(name)
    if dev is not None:
        if dev.partitions:
            reasons.append(f"{name} has partitions ({', '.join(dev.partitions)})")
        if dev.read_only:
            reasons.append(f"{name} is read-only")
    return reasons


def device_in_use(roots: Roots, name: str, fd: int) -> list[str]:
    """Signatures and openers of the device open on ``fd`` and of its partitions
    (partitions first), read through plain descriptors."""
    dev = read_inventory(roots, use_udev=False).get(name)
    reasons: list[str] = []
    for part in dev.partitions if dev is not None else ():
        rdev = _sysfs_dev(roots, part)
        if rdev is None:
            continue
        try:
            part_fd = open_device(part, rdev)
        except TargetError as exc:
            reasons.append(str(exc))
            continue
        try:
            reasons += _member_reasons(roots, part, part_fd)
        finally:
            os.close(part_fd)
    return reasons + _member_reasons(roots, name, fd)


def _member_reasons(roots: Roots, name: str, fd: int) -> list[str]:
    reasons = [f"{name} holds {sig}" for sig in signatures(fd)]
    return reasons + openers(roots, fd, f"/dev/{name}")


def _sysfs_dev(roots: Roots, name: str) -> int | None:
    numbers = read_dev_numbers(roots, name)
    return os.makedev(*numbers) if numbers is not None else None


def openers(roots: Roots, fd: int, shown: str) -> list[str]:
    """``pid N (comm) has /dev/X open`` for every process holding the device of ``fd`` open
    (our own descriptor ``fd`` excepted)."""
    rdev = os.fstat(fd).st_rdev
    me = str(os.getpid())
    found = []
    try:
        pids = [p for p in os.listdir(roots.proc) if p.isdigit()]
    except OSError:
        return []
    for pid in pids:
        for number, path in fd_paths(roots, int(pid)):  # empty when gone or not ours to see
            if pid == me and number == fd:
                continue
            try:
                st = os.stat(path)
            except OSError:
                continue
            if stat.S_ISBLK(st.st_mode) and st.st_rdev == rdev:
                try:
                    comm = (roots.proc / pid / "comm").read_text().strip()
                except OSError:
                    comm = "?"
                found.append(f"pid {pid} ({comm}) has {shown} open")
                break
    return found


BUSY_IOPS = 50.0
"""Reads and writes per second from which a device counts as in use for a read probe."""
BUSY_SAMPLE_S = 1.0
"""How long a headless start measures the device's IOPS before saying it is in use (the
TUI takes its last :data:`BUSY_RECENT_S` of frames instead; a command has none and should
not wait 5 s)."""
BUSY_RECENT_S = 5.0
"""The span of recent frames the TUI judges a device's IOPS by (the last 5 s)."""

RecentIops = Callable[[str], tuple[float, float] | None]
"""``(IOPS, seconds covered)`` of a device from frames already taken, or None."""


def device_busy_note(
    text: str,
    roots: Roots,
    sample_s: float = BUSY_SAMPLE_S,
    recent: RecentIops | None = None,
) -> str | None:
    """A line saying the device target ``text`` is in use (mounted, or at least
    :data:`BUSY_IOPS`), for read probes and sweeps; None for a directory or an idle device.

    The IOPS come from ``recent`` (the TUI's frames: no wait) when it knows the device;
    otherwise they are measured over ``sample_s``, which blocks: call it from a worker.
    """
    try:
        st = os.stat(_typed_path(text))
    except (OSError, TargetError):
        return None
    if not stat.S_ISBLK(st.st_mode):
        return None
    name = device_of_dev_t(roots, st.st_rdev)
    if name is None:
        return None
    inventory = read_inventory(roots, use_udev=False)
    dev = inventory.get(name)
    mounts: list[str] = []
    if dev is not None:
        for member in (dev, *(inventory.get(p) for p in dev.partitions)):
            if member is not None:
                mounts += [str(m) for m in member.mounts]
    known = recent(name) if recent is not None else None
    iops: float | None
    if known is not None:
        iops, span = known
        over = f"over the last {span:.0f} s" if span >= 1 else "in the last frame"
    else:
        iops, over = _iops(roots, name, sample_s), f"measured over {sample_s:g} s"
    if not mounts and (iops is None or iops < BUSY_IOPS):
        return None
    said = [f"mounted on {', '.join(mounts)}"] if mounts else []
    if iops is not None:
        said.append(f"{iops:,.0f} IOPS {over}")
    return (
        f"/dev/{name} is in use ({'; '.join(said)}): the probe adds its reads to that load, "
        "and its figures include the other I/O"
    )


def _iops(roots: Roots, name: str, seconds: float) -> float | None:
    """Reads plus writes completed per second by ``name`` over the next ``seconds``."""

    def completed() -> int | None:
        try:
            fields = (roots.sys_class_block / name / "stat").read_text().split()
            return int(fields[0]) + int(fields[4])
        except (OSError, ValueError, IndexError):
            return None

    start, first = time.monotonic(), completed()
    time.sleep(seconds)
    last = completed()
    if first is None or last is None or last < first:
        return None
    return (last - first) / max(time.monotonic() - start, 1e-3)


def live_probe_files() -> tuple[Path, ...]:
    """Probe files of probes alive in this process (their paths, for people)."""
    return tuple(w.display_path for w in live_workdirs())


def remove_all_probe_files() -> None:
    """Remove every probe file and probe directory still alive: for signal handlers, atexit."""
    remove_all_workdirs()
