r"""Block-device topology from sysfs and procfs, shared by the readers.

* ``major:minor`` to kernel name: ``/sys/dev/block/MAJOR:MINOR`` is a symlink whose last
  component is the name (``../../devices/.../block/sda/sda1`` -> ``sda1``).
* A partition's whole disk: ``/sys/class/block/PART`` resolves to a directory inside its
  disk's (``.../block/sda/sda1``), and only partitions have a ``partition`` file.
* Mounts: ``/proc/self/mountinfo`` (proc(5)): ``id parent major:minor root mountpoint options
  [optional...] - fstype source superopts``. The kernel writes a space, tab, newline or
  backslash in a path as an octal escape (``\040``, ``\011``, ``\012``, ``\134``:
  ``seq_path`` with ``" \t\n\\"``), so every line is one mount.

This is the one home of ``major:minor`` texts, of the ``major:minor`` -> name map and of the
mountinfo parser; the inventory, the probe's target checks and the tracers read through it.
* Open files: ``/proc/PID/fd/N`` magic links; ``stat`` follows them to the open file itself.

Nothing here writes anything.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

from iotop_plus.roots import Roots, open_regular

_NAMES_KEPT = 4096


def dev_numbers(text: str) -> tuple[int, int] | None:
    """``(major, minor)`` of a ``MAJOR:MINOR`` text (sysfs ``dev`` files, mountinfo).

    None unless both halves are ASCII digits.
    """
    major, sep, minor = text.strip().partition(":")
    if not sep or not _is_number(major) or not _is_number(minor):
        return None
    return int(major), int(minor)


def _is_number(text: str) -> bool:
    return text.isascii() and text.isdigit()


_DEV_FILE_BYTES = 64
"""A sysfs ``dev`` file is ``MAJOR:MINOR\\n``: at most 22 bytes."""


def read_dev_numbers(roots: Roots, name: str) -> tuple[int, int] | None:
    """``(major, minor)`` of the block device ``name`` from ``/sys/class/block/NAME/dev``,
    or None when it is gone or the file says something else (opened as a regular file)."""
    try:
        fd = open_regular(roots.sys_class_block / name / "dev")
    except OSError:
        return None
    try:
        raw = os.read(fd, _DEV_FILE_BYTES)
    except OSError:
        return None
    finally:
        os.close(fd)
    return dev_numbers(raw.decode("ascii", "replace"))


_OCTAL_ESCAPE = re.compile(r"\\([0-3][0-7][0-7])")


def file_device(path: str, by_number: Mapping[tuple[int, int], str]) -> str | None:
    """The block device (a name of ``by_number``) that holds the file at ``path``, from its
    ``st_dev``; None for a deleted file or one on a filesystem without a block device
    (tmpfs, overlay, btrfs's anonymous numbers)."""
    try:
        st_dev = os.stat(path).st_dev
    except (OSError, ValueError):
        return None
    return by_number.get((os.major(st_dev), os.minor(st_dev)))


def unescape_mount_path(field: str) -> str:
    r"""A mountinfo path field with the kernel's octal escapes decoded (``\040`` space,
    ``\011`` tab, ``\012`` newline, ``\134`` backslash, and any other ``\ooo``)."""
    if "\\" not in field:
        return field
    return _OCTAL_ESCAPE.sub(lambda m: chr(int(m.group(1), 8)), field)


def device_name(roots: Roots, major: int, minor: int) -> str | None:
    """The kernel name of the block device ``major:minor``, or None if it is not one."""
    try:
        link = os.readlink(roots.sys / "dev" / "block" / f"{major}:{minor}")
    except OSError:
        return None
    return os.path.basename(link)


def partition_parent(sysdir: Path) -> str | None:
    """The whole disk holding the partition whose sysfs directory is ``sysdir``.

    None when ``sysdir`` is no partition, or when sysfs does not say (the directory is
    gone, or a captured tree keeps the partition outside its disk's directory).
    """
    if not (sysdir / "partition").exists():
        return None
    try:
        parent = sysdir.resolve().parent.name
    except OSError:
        return None
    return parent if parent and parent != "block" else None


@dataclass(frozen=True, slots=True)
class MountEntry:
    """One line of ``/proc/PID/mountinfo``."""

    major: int
    """Major number of the filesystem's ``st_dev``."""
    minor: int
    """Minor number of the filesystem's ``st_dev``."""
    mountpoint: str
    """Where it is mounted (the kernel's octal escapes decoded: :func:`unescape_mount_path`)."""
    fstype: str
    """Filesystem type, e.g. ``ext4``; ``?`` when the line has none."""
    source: str
    """Mount source, e.g. ``/dev/vda1`` or ``overlay``; empty when the line has none."""
    super_options: str
    """Per-superblock options (overlay's ``upperdir=`` lives here); may be empty."""
    mount_id: int = -1
    """The mount's unique id (first field; ``mnt_id`` in ``/proc/PID/fdinfo/N``)."""


def mountinfo_entries(text: str) -> Iterator[MountEntry]:
    """Every well-formed line of mountinfo ``text``; malformed lines are skipped."""
    for line in text.splitlines():
        left, sep, right = line.partition(" - ")
        parts = left.split()
        if not sep or len(parts) < 5:
            continue
        numbers = dev_numbers(parts[2])
        if numbers is None:
            continue
        tail = right.split()
        yield MountEntry(
            numbers[0],
            numbers[1],
            unescape_mount_path(parts[4]),
            tail[0] if tail else "?",
            unescape_mount_path(tail[1]) if len(tail) > 1 else "",
            tail[2] if len(tail) > 2 else "",
            int(parts[0]) if _is_number(parts[0]) else -1,
        )


def parse_mountinfo_sources(text: str) -> dict[tuple[int, int], MountEntry]:
    """``(major, minor)`` of each mount -> its first mountinfo line that names a source."""
    out: dict[tuple[int, int], MountEntry] = {}
    for entry in mountinfo_entries(text):
        if entry.source:
            out.setdefault((entry.major, entry.minor), entry)
    return out


def fd_paths(roots: Roots, pid: int) -> list[tuple[int, str]]:
    """``(fd, "/proc/PID/fd/N")`` for every open file of ``pid``, by fd.

    Empty when the process is gone or not ours to read.
    """
    fd_dir = roots.proc / str(pid) / "fd"
    try:
        fds = sorted(int(n) for n in os.listdir(fd_dir) if n.isdigit())
    except OSError:
        return []
    return [(fd, f"{fd_dir}/{fd}") for fd in fds]


@dataclass(frozen=True, slots=True)
class OpenBlockFile:
    """One open file of a process and the block device its I/O most likely reaches."""

    fd: int
    """File descriptor number in the process."""
    path: str
    """What ``/proc/PID/fd/N`` points to (may end in `` (deleted)``)."""
    device: str
    """Kernel name of the block device, e.g. ``vda`` or ``dm-0``."""
    how: str
    """``device``: the block device itself is open (exact); ``filesystem``: a file on a
    filesystem whose device the kernel names (page cache may absorb the I/O);
    ``guess``: the filesystem has no device of its own (btrfs, overlay) and the device
    is taken from its mount source: a best guess."""


class BlockDeviceNames:
    """Maps ``major:minor`` to kernel block-device names through ``/sys/dev/block``."""

    def __init__(self, roots: Roots) -> None:
        self.roots = roots
        self._names: dict[tuple[int, int], str | None] = {}
        """Forgotten when it reaches _NAMES_KEPT: anonymous st_devs (tmpfs, overlay...)
        and loop minors come and go."""
        self._mounts: dict[tuple[int, int], MountEntry] | None = None

    def name(self, major: int, minor: int) -> str | None:
        """The kernel name of a block device, or None if it is not one."""
        key = (major, minor)
        if key not in self._names:
            if len(self._names) >= _NAMES_KEPT:
                self._names.clear()
            self._names[key] = device_name(self.roots, major, minor)
        return self._names[key]

    def holder_of(self, st_dev: int) -> tuple[str, str] | None:
        """``(device, how)`` for the filesystem of a file with this ``st_dev``."""
        major, minor = os.major(st_dev), os.minor(st_dev)
        name = self.name(major, minor)
        if name is not None:
            return name, "filesystem"
        mount = self.mounts().get((major, minor))
        if mount is None:
            return None
        if mount.fstype == "overlay":
            # Writes land in the upper layer; reads may come from any lower one.
            for opt in mount.super_options.split(","):
                if opt.startswith("upperdir="):
                    try:
                        upper = os.stat(opt.removeprefix("upperdir="))
                    except OSError:
                        return None
                    found = self.name(os.major(upper.st_dev), os.minor(upper.st_dev))
                    return (found, "guess") if found else None
            return None
        if mount.source.startswith("/dev/"):
            # btrfs gives each subvolume an anonymous st_dev; the source names one member.
            base = os.path.basename(os.path.realpath(mount.source))
            if (self.roots.sys_class_block / base).exists():
                return base, "guess"
        return None

    def mounts(self) -> dict[tuple[int, int], MountEntry]:
        """The mount table, read once."""
        if self._mounts is None:
            try:
                raw = (self.roots.proc / "self" / "mountinfo").read_bytes()
            except OSError:
                raw = b""
            # Paths are bytes: an undecodable one keeps its bytes for os.stat and realpath.
            self._mounts = parse_mountinfo_sources(raw.decode("utf-8", "surrogateescape"))
        return self._mounts


def open_block_files(
    roots: Roots, pid: int, names: BlockDeviceNames | None = None
) -> tuple[OpenBlockFile, ...]:
    """The open files of ``pid`` that sit on a block device, sorted by fd.

    Block device nodes map exactly (``st_rdev``); regular files map through the
    ``st_dev`` of their filesystem. Sockets, pipes and files on tmpfs, procfs or network
    filesystems are left out. Returns () when the process is gone or not ours to read.
    """
    names = names or BlockDeviceNames(roots)
    out = []
    for fd, link in fd_paths(roots, pid):
        try:
            target = os.readlink(link)
            st = os.stat(link)  # follows the magic link to the open file itself
        except OSError:
            continue
        if stat.S_ISBLK(st.st_mode):
            name = names.name(os.major(st.st_rdev), os.minor(st.st_rdev))
            if name is not None:
                out.append(OpenBlockFile(fd, target, name, "device"))
        elif stat.S_ISREG(st.st_mode):
            found = names.holder_of(st.st_dev)
            if found is not None:
                out.append(OpenBlockFile(fd, target, *found))
    return tuple(out)
