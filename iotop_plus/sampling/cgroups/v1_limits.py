"""The cgroup v1 throttle limits (``blkio.throttle.*_device``), read and parsed: for the full
cgroup part (:mod:`.cgroups`) and the throttle watch alike."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping

from iotop_plus.sampling.cgroups.files import IoLimits

LIMIT_KEYS = ("rbps", "wbps", "riops", "wiops")
"""The limits, in io.max's order (bytes/s and I/Os per second, read and write)."""
V1_FILES = {
    "rbps": "blkio.throttle.read_bps_device",
    "wbps": "blkio.throttle.write_bps_device",
    "riops": "blkio.throttle.read_iops_device",
    "wiops": "blkio.throttle.write_iops_device",
}
BLKIO_THROTTLE = "blkio.throttle"


def parse_v1_throttle(texts: Mapping[str, str | None]) -> dict[str, dict[str, int | None]]:
    """The four v1 throttle files (key of :data:`V1_FILES` -> text; None: absent) as
    ``{MAJ:MIN: {rbps, wbps, riops, wiops}}`` (None: no limit); devices without any left out.

    Raises:
        ValueError: quoting the first line that is not ``MAJ:MIN VALUE``.
    """
    out: dict[str, dict[str, int | None]] = {}
    for key in LIMIT_KEYS:
        for line in (texts.get(key) or "").splitlines():
            words = line.split()
            if not words:
                continue
            major, sep, minor = words[0].partition(":")
            if (
                len(words) != 2
                or not sep
                or not (major.isdigit() and minor.isdigit())
                or not words[1].isdigit()
            ):
                raise ValueError(f"{V1_FILES[key]}: {line.strip()[:80]!r}")
            if int(words[1]):
                limits = out.setdefault(words[0], dict.fromkeys(LIMIT_KEYS))
                limits[key] = int(words[1])
    return out


def read_v1_limits(
    path: str, rel: str, problems: list[str], read: Callable[[str], str]
) -> IoLimits | None:
    """The v1 throttle limits of the cgroup directory ``path`` (None: no throttle files);
    a file that cannot be read or parsed is one line in ``problems``."""
    texts: dict[str, str | None] = {}
    for key, name in V1_FILES.items():
        try:
            texts[key] = read(os.path.join(path, name))
        except (FileNotFoundError, NotADirectoryError):
            texts[key] = None
        except OSError as exc:
            problems.append(f"cannot read {rel}/{name}: {exc.strerror or exc}")
            return None
    if all(t is None for t in texts.values()):
        return None
    try:
        return IoLimits(parse_v1_throttle(texts), source=BLKIO_THROTTLE)
    except ValueError as exc:
        problems.append(f"{rel}: {exc}")
        return None
