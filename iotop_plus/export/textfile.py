"""``serve --textfile PATH``: the exposition written for node_exporter's textfile collector.

Written atomically: a temporary file in the same directory (``O_EXCL|O_NOFOLLOW``), flushed,
then renamed over ``PATH``, so node_exporter never reads half a file. The classic text format
(0.0.4): the textfile collector does not read OpenMetrics.
"""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

TEXTFILE_MODE = 0o644
"""Metrics are not secret, and node_exporter may run as another user."""


def write_textfile(path: Path, body: bytes) -> None:
    """Replace ``path`` with ``body`` atomically.

    Raises:
        OSError: the directory cannot be opened or written.
    """
    directory = os.open(path.parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    tmp = f".{path.name}.{os.getpid()}.tmp"
    try:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp, dir_fd=directory)  # our own leftover from a crash
        fd = os.open(
            tmp,
            os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
            TEXTFILE_MODE,
            dir_fd=directory,
        )
        try:
            os.fchmod(fd, TEXTFILE_MODE)  # whatever the umask
            view = memoryview(body)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        try:
            os.rename(tmp, path.name, src_dir_fd=directory, dst_dir_fd=directory)
        except OSError:
            with contextlib.suppress(OSError):
                os.unlink(tmp, dir_fd=directory)
            raise
    finally:
        os.close(directory)
