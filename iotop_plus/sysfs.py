"""Reading files of sysfs and procfs, or of a captured tree standing in for them.

A captured tree may hold a FIFO where sysfs has a file (``open()`` would wait forever),
``/dev/zero`` where a counter file should be (a read would never end) or a sparse 1 TB file:
every read here opens non-blocking, refuses anything but a regular file and stops at a cap.
"""

from __future__ import annotations

import errno
import os
import stat

from iotop_plus.roots import file_kind

MAX_SOURCE_BYTES = 64 * 1024 * 1024
"""Cap on a /proc file read per tick (diskstats, mountinfo). A diskstats line is under 200
bytes, so 64 MiB is some 300,000 devices, far more than any host has, while a hostile tree
(``/dev/zero`` as diskstats, a sparse 1 TB file) costs at most 64 MiB and a fraction of a
second instead of memory without bound."""


MAX_ATTRIBUTE_BYTES = 64 * 1024
"""Cap on one sysfs attribute. The kernel gives a sysfs ``show()`` one page (4 KiB; 64 KiB on
some arm64 and ppc64 kernels), so no real attribute is longer."""


def read_bounded(
    path: str | os.PathLike[str], limit: int = MAX_SOURCE_BYTES, errors: str = "replace"
) -> str:
    """The text of a regular file, read at most ``limit`` bytes, never blocking.

    Opened with ``O_NONBLOCK`` (``open()`` of a FIFO with no writer would wait forever) and
    checked with ``fstat`` on that descriptor. Bytes that are not UTF-8 become U+FFFD, or with
    ``errors="surrogateescape"`` (a file that holds names) surrogate escapes, as ``os.fsdecode``.

    Raises:
        OSError: the file cannot be opened; ``EINVAL`` "not a regular file (a FIFO)" for
            anything but a regular file; ``EFBIG`` when it holds more than ``limit`` bytes.
    """
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_NOCTTY | os.O_CLOEXEC)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise OSError(errno.EINVAL, f"not a regular file ({file_kind(mode)})", os.fspath(path))
        chunks: list[bytes] = []
        total = 0
        while True:
            # /proc files report size 0: read until EOF, one seq_file buffer at a time.
            chunk = os.read(fd, min(1 << 20, limit + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > limit:
                raise OSError(
                    errno.EFBIG, f"larger than {limit:,} bytes: not read", os.fspath(path)
                )
    finally:
        os.close(fd)
    return b"".join(chunks).decode("utf-8", errors)


def read_attribute(
    path: str | os.PathLike[str], limit: int = MAX_ATTRIBUTE_BYTES, errors: str = "replace"
) -> str | None:
    """A sysfs attribute (or, with a larger ``limit``, a /proc table), stripped; None when it
    is missing, unreadable, not a regular file or over ``limit`` (see :func:`read_bounded`).
    ``errors="surrogateescape"`` for files of paths: their bytes are kept as they are."""
    try:
        return read_bounded(path, limit, errors).strip()
    except OSError:
        return None
