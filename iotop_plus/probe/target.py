"""What a probe may touch, and how: the safety rules of DESIGN.md in one place.

* A directory target gets a file that the probe creates itself (``O_EXCL``, a name containing
  ``iotop-plus-probe``), sized from the free space, removed whatever happens.
* A missing directory is refused: fio would create it (and its parents) silently.
* A block device target runs read-only presets, and fio always gets ``--readonly``.
* A write preset on a raw device is refused while anything uses the device or its partitions
  (mount, swap, holder, a filesystem or partition-table signature); otherwise the user must
  type the device's name to confirm.
"""

from __future__ import annotations

import contextlib
import errno
import os
import secrets
import shutil
import stat
import subprocess
import threading
from dataclasses import dataclass
from pathlib import Path

from iotop_plus.probe.presets import Preset, ProbeParams
from iotop_plus.roots import Roots
from iotop_plus.sampling.inventory import read_inventory

#: Every probe file's name contains this, so leftovers are easy to find (and the repo's
#: stop hook looks for it).
PROBE_FILE_MARK = "iotop-plus-probe"
#: A probe file never takes more than this share of the free space.
FREE_SPACE_FRACTION = 0.25
#: Below this a probe measures nothing useful.
MIN_PROBE_BYTES = 16 * 1024 * 1024

# Magic bytes of common filesystems, volume formats and partition tables: (offset, bytes,
# what). Used besides ``blkid -p`` so a missing blkid never lets a write through.
_SIGNATURES: tuple[tuple[int, bytes, str], ...] = (
    (1080, b"\x53\xef", "ext2/3/4 filesystem"),
    (0, b"XFSB", "XFS filesystem"),
    (65600, b"_BHRfS_M", "btrfs filesystem"),
    (4086, b"SWAPSPACE2", "swap signature"),
    (0, b"LUKS\xba\xbe", "LUKS volume"),
    (512, b"EFI PART", "GPT partition table"),
    (510, b"\x55\xaa", "DOS partition table or boot sector"),
    (3, b"NTFS    ", "NTFS filesystem"),
    (0, b"LABELONE", "LVM physical volume"),
    (512, b"LABELONE", "LVM physical volume"),
    (4096, b"\xfc\x4e\x2b\xa9", "md RAID member"),
)


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
    """``/dev/NAME`` for a device target."""
    device: str | None
    """Kernel name of the block device measured (for a directory: the one holding it, if
    any), used for its settings and the live iostat line."""
    size_bytes: int
    """Bytes fio may use: the probe file's size, or the span of the device."""
    readonly: bool
    """fio gets ``--readonly`` (always for a device unless a write was confirmed)."""
    note: str | None = None
    """Why the size is smaller than asked, when it is."""

    @property
    def label(self) -> str:
        """Where the probe runs, for people."""
        if self.kind == "device":
            return str(self.device_path)
        on = f" (on {self.device})" if self.device else ""
        return f"{self.directory}{on}"


def device_of_dev_t(roots: Roots, dev: int) -> str | None:
    """Kernel name of the block device with this ``st_dev``/``st_rdev``, or None."""
    link = roots.sys / "dev" / "block" / f"{os.major(dev)}:{os.minor(dev)}"
    try:
        return link.resolve(strict=True).name
    except OSError:
        return None


def plan_target(
    text: str,
    preset: Preset,
    params: ProbeParams,
    roots: Roots,
    *,
    confirm: str | None = None,
) -> ProbeTarget:
    """Check ``text`` (a directory or a block device path) for this preset.

    Nothing is created here.

    Raises:
        TargetError: one line saying why the target is refused.
        ConfirmationNeeded: a write preset on an unused device without the typed name.
    """
    text = text.strip()
    if not text:
        raise TargetError("no target: give a directory (a probe file is made in it) or a device")
    path = Path(text).expanduser()
    if not path.is_absolute():
        path = Path.cwd() / path
    try:
        st = path.stat()
    except FileNotFoundError:
        raise TargetError(
            f"target {path} does not exist (a probe never creates directories)"
        ) from None
    except OSError as exc:
        raise TargetError(f"cannot use target {path}: {exc.strerror}") from None
    if stat.S_ISBLK(st.st_mode):
        return _plan_device(path, st, preset, params, roots, confirm)
    if stat.S_ISDIR(st.st_mode):
        return _plan_directory(path, st, params, roots)
    raise TargetError(
        f"target {path} is neither a directory nor a block device "
        "(a probe never writes to an existing file)"
    )


def _plan_directory(
    path: Path, st: os.stat_result, params: ProbeParams, roots: Roots
) -> ProbeTarget:
    if not os.access(path, os.W_OK | os.X_OK):
        raise TargetError(f"cannot write in {path}: permission denied")
    try:
        vfs = os.statvfs(path)
    except OSError as exc:
        raise TargetError(f"cannot read free space of {path}: {exc.strerror}") from None
    free = vfs.f_bavail * vfs.f_frsize
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
    return ProbeTarget(
        "file", path, None, device_of_dev_t(roots, st.st_dev), size, readonly=False, note=note
    )


def _plan_device(
    path: Path,
    st: os.stat_result,
    preset: Preset,
    params: ProbeParams,
    roots: Roots,
    confirm: str | None,
) -> ProbeTarget:
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
    if not preset.writes:
        return ProbeTarget("device", None, path, name, span, readonly=True)
    reasons = device_in_use(roots, name, path)
    if reasons:
        raise TargetError(
            f"refusing to write to {path}: " + "; ".join(reasons) + " (pick a directory instead)"
        )
    if confirm != name:
        raise ConfirmationNeeded(name)
    return ProbeTarget("device", None, path, name, span, readonly=False)


def device_in_use(roots: Roots, name: str, path: Path) -> list[str]:
    """Every reason writing to the device (or its partitions) would hurt someone."""
    inventory = read_inventory(roots, use_udev=False)
    reasons = list(inventory.in_use_reasons(name))
    dev = inventory.get(name)
    members = [(name, path)]
    if dev is not None:
        if dev.partitions:
            reasons.append(f"{name} has partitions ({', '.join(dev.partitions)})")
        members += [(p, path.parent / p) for p in dev.partitions]
        if dev.read_only:
            reasons.append(f"{name} is read-only")
    for member, member_path in members:
        reasons += [f"{member} holds {sig}" for sig in signatures(member_path)]
        reasons += openers(roots, member_path)
        if _exclusively_busy(member_path):
            reasons.append(f"{member} is busy (held exclusively by the kernel or a program)")
    return reasons


def openers(roots: Roots, path: Path) -> list[str]:
    """``pid N (comm) has /dev/X open`` for every process holding the device open."""
    try:
        rdev = path.stat().st_rdev
    except OSError:
        return []
    found = []
    try:
        pids = [p for p in os.listdir(roots.proc) if p.isdigit()]
    except OSError:
        return []
    for pid in pids:
        fd_dir = roots.proc / pid / "fd"
        try:
            fds = os.listdir(fd_dir)
        except OSError:
            continue  # gone, or not ours to see
        for fd in fds:
            try:
                st = os.stat(fd_dir / fd)
            except OSError:
                continue
            if stat.S_ISBLK(st.st_mode) and st.st_rdev == rdev:
                try:
                    comm = (roots.proc / pid / "comm").read_text().strip()
                except OSError:
                    comm = "?"
                found.append(f"pid {pid} ({comm}) has {path} open")
                break
    return found


def _exclusively_busy(path: Path) -> bool:
    # On a block device, O_EXCL fails with EBUSY while it is mounted or claimed by md, dm,
    # swap or another exclusive opener; it reads nothing and writes nothing.
    try:
        fd = os.open(path, os.O_RDONLY | os.O_EXCL)
    except OSError as exc:
        return exc.errno == errno.EBUSY
    os.close(fd)
    return False


def signatures(path: Path) -> list[str]:
    """Filesystem, volume and partition-table signatures found on a device (read only)."""
    found: list[str] = []
    blkid = shutil.which("blkid")
    if blkid is not None:
        try:
            proc = subprocess.run(
                [blkid, "-p", "-o", "export", str(path)],
                capture_output=True,
                text=True,
                timeout=20,
                check=False,
            )
        except (OSError, subprocess.TimeoutExpired):
            proc = None
        if proc is not None and proc.returncode == 0:
            fields = dict(line.split("=", 1) for line in proc.stdout.splitlines() if "=" in line)
            kind = fields.get("TYPE") or fields.get("PTTYPE") or "a signature"
            found.append(f"a {kind} signature (blkid)")
    try:
        with open(path, "rb") as fh:
            head = fh.read(65608)
    except OSError as exc:
        # Unreadable means unknown, and unknown is not safe to overwrite.
        return [*found, f"unreadable content ({exc.strerror})"]
    for offset, magic, what in _SIGNATURES:
        if head[offset : offset + len(magic)] == magic:
            found.append(f"a {what}")
    return found


# The probe files that exist right now, so a signal handler or atexit can remove them even
# when the code that made them never reaches its ``finally``.
_live_files: set[Path] = set()
_live_lock = threading.Lock()


def create_probe_file(target: ProbeTarget) -> Path:
    """Create the probe file of a directory target with O_EXCL; returns its path.

    Raises:
        TargetError: when the file cannot be created.
    """
    if target.kind != "file" or target.directory is None:
        raise TargetError("only a directory target gets a probe file")
    for _ in range(5):
        path = target.directory / f"{PROBE_FILE_MARK}-{os.getpid()}-{secrets.token_hex(4)}.tmp"
        try:
            fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY | os.O_NOFOLLOW, 0o600)
        except FileExistsError:
            continue
        except OSError as exc:
            raise TargetError(
                f"cannot create a probe file in {target.directory}: {exc.strerror}"
            ) from None
        with _live_lock:
            _live_files.add(path)
        os.close(fd)
        return path
    raise TargetError(f"cannot create a unique probe file in {target.directory}")


def remove_probe_file(path: Path) -> None:
    """Remove a probe file this process created (never anything else)."""
    with _live_lock:
        if path not in _live_files:
            return
        _live_files.discard(path)
    with contextlib.suppress(FileNotFoundError):
        path.unlink()


def live_probe_files() -> tuple[Path, ...]:
    """Probe files this process has created and not yet removed."""
    with _live_lock:
        return tuple(_live_files)


def remove_all_probe_files() -> None:
    """Remove every probe file still alive: for signal handlers and atexit."""
    for path in live_probe_files():
        remove_probe_file(path)
