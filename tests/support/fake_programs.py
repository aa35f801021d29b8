"""Fake external programs (shell scripts) and checks on the processes they leave."""

from __future__ import annotations

import stat
from pathlib import Path


def script(directory: Path, body: str, name: str = "helper") -> Path:
    """An executable shell script ``directory/name`` (readable and runnable by anyone)."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(stat.S_IRWXU | stat.S_IRGRP | stat.S_IXGRP | stat.S_IROTH | stat.S_IXOTH)
    return path


def running(pid: int) -> bool:
    """Whether ``pid`` is a live process (an unreaped zombie is not)."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return text[text.rfind(")") + 2] != "Z"


def pids(path: Path) -> list[int]:
    """The pids a fake wrote into ``path``, one a line."""
    return [int(line) for line in path.read_text().split()]
