"""One lookup for the external programs iotop-plus runs (fio, blkid, setpriv, bpftrace, ...).

As root, ``PATH`` is ignored: a program is taken only from the system directories, and only
where the directory, its parents and the binary are owned by root and not writable by group
or others. A root shell whose ``PATH`` starts with a user's ``~/bin`` must never run that
user's ``fio``. Other users get ``PATH``, like any program they run.
Tests inject the search path with :func:`search_path_override` (in-process).
"""

from __future__ import annotations

import contextlib
import os
import stat
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

#: Where root looks for programs, in order.
SYSTEM_PATH: tuple[str, ...] = (
    "/usr/local/sbin",
    "/usr/local/bin",
    "/usr/sbin",
    "/usr/bin",
    "/sbin",
    "/bin",
)

_override: tuple[str, ...] | None = None
_override_lock = threading.Lock()


@dataclass(frozen=True)
class ProgramLookup:
    """Where a program was looked for, and what was found."""

    name: str
    """The program's name, e.g. ``fio``."""
    path: str | None
    """The binary to run, or None when none was found (or none could be trusted)."""
    searched: tuple[str, ...]
    """The directories searched, in order."""
    skipped: tuple[str, ...]
    """``PATH: reason`` for each candidate refused as untrusted (root only)."""
    trusted_only: bool
    """True when running as root: system directories only, ``PATH`` ignored."""

    def missing(self, hint: str = "") -> str:
        """One line saying that the program is missing, where it was looked for, and why
        a candidate was refused."""
        where = ":".join(self.searched) or "(empty search path)"
        text = f"{self.name} is not installed (looked in {where}"
        if self.trusted_only:
            text += "; as root PATH is not used"
        text += ")"
        if self.skipped:
            text += "; skipped " + ", ".join(self.skipped)
        return f"{text}: {hint}" if hint else text


def search_path() -> tuple[str, ...]:
    """The directories searched now: the override, else the system ones (root) or PATH."""
    with _override_lock:
        if _override is not None:
            return _override
    if _is_root():
        return SYSTEM_PATH
    return tuple(d for d in os.environ.get("PATH", os.defpath).split(os.pathsep) if d)


@contextlib.contextmanager
def search_path_override(directories: Sequence[str]) -> Iterator[None]:
    """Search only ``directories`` inside the block (tests); root still checks ownership."""
    global _override
    with _override_lock:
        saved, _override = _override, tuple(str(d) for d in directories)
    try:
        yield
    finally:
        with _override_lock:
            _override = saved


def lookup_program(name: str) -> ProgramLookup:
    """Find ``name`` the way iotop-plus runs it (see the module docstring)."""
    trusted_only = _is_root()
    dirs = search_path()
    skipped: list[str] = []
    for directory in dirs:
        candidate = os.path.join(directory, name)
        if not os.path.isfile(candidate) or not os.access(candidate, os.X_OK):
            continue
        if trusted_only:
            why = _untrusted(candidate)
            if why:
                skipped.append(f"{candidate}: {why}")
                continue
        return ProgramLookup(name, candidate, dirs, tuple(skipped), trusted_only)
    return ProgramLookup(name, None, dirs, tuple(skipped), trusted_only)


def find_program(name: str) -> str | None:
    """The binary to run for ``name``, or None (see :func:`lookup_program`)."""
    return lookup_program(name).path


def _is_root() -> bool:
    return os.geteuid() == 0


def _untrusted(path: str) -> str | None:
    """Why root must not run ``path``, or None when it may.

    The binary (after symlinks) and every directory above it and above the candidate's own
    name must be root's and not writable by group or others. A root-owned sticky directory
    (``/tmp``) may be world-writable above a root-owned one: nobody else can rename in it.
    """
    real = os.path.realpath(path)
    try:
        st = os.stat(real)
    except OSError as exc:
        return exc.strerror or "cannot stat"
    if not stat.S_ISREG(st.st_mode):
        return "not a regular file"
    if st.st_uid != 0:
        return f"owned by uid {st.st_uid}, not root"
    if st.st_mode & (stat.S_IWGRP | stat.S_IWOTH):
        return "writable by group or others"
    for start in {os.path.dirname(real), os.path.realpath(os.path.dirname(path))}:
        why = _untrusted_dirs(start)
        if why:
            return why
    return None


def _untrusted_dirs(directory: str) -> str | None:
    first = True
    current = directory
    while True:
        try:
            st = os.stat(current)
        except OSError as exc:
            return f"{current}: {exc.strerror}"
        if st.st_uid != 0:
            return f"directory {current} is owned by uid {st.st_uid}, not root"
        writable = st.st_mode & (stat.S_IWGRP | stat.S_IWOTH)
        if writable and (first or not st.st_mode & stat.S_ISVTX):
            return f"directory {current} is writable by group or others"
        parent = os.path.dirname(current)
        if parent == current:
            return None
        current, first = parent, False
