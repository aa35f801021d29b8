"""Cgroup fixture trees: the committed layouts, and synthetic trees of any size.

Each tree is a ``proc/`` + ``sys/`` pair whose ``sys/fs/cgroup`` looks like the kernel's: a
directory per cgroup, with ``io.stat``, ``io.pressure``, limits and ``cgroup.procs``. The
committed trees (``tests/fixtures/cgroups``) are written by its ``make_trees.py``; tests and
``benchmarks/bench_cgroups.py`` make synthetic ones in a temporary directory with
:func:`synthetic_tree` (10,000 cgroups is ~200,000 files: never committed).
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from pathlib import Path

from tests.support.wait import holds_within

DOCKER_ID = "4f6c3b2a1d0e9f8a7b6c5d4e3f2a1b0c9d8e7f6a5b4c3d2e1f0a9b8c7d6e5f4a"
CONTAINERD_ID = "9b1e7c3d5f2a4e6c8b0d1f3a5c7e9b2d4f6a8c0e1b3d5f7a9c2e4b6d8f0a1c3e"
POD_UID = "1f2e3d4c-1234-5678-9abc-def012345678"
POD_UID_2 = "2a3b4c5d-2345-6789-abcd-ef0123456789"
POD_UID_3 = "3b4c5d6e-3456-789a-bcde-f01234567890"

DISKSTATS = (
    "   8       0 sda 100 0 800 10 100 0 800 10 0 20 20 0 0 0 0 0 0\n"
    "   8      16 sdb 100 0 800 10 100 0 800 10 0 20 20 0 0 0 0 0 0\n"
    " 253       0 dm-0 100 0 800 10 100 0 800 10 0 20 20 0 0 0 0 0 0\n"
)
PRESSURE = (
    "some avg10=1.50 avg60=0.80 avg300=0.20 total=123456\n"
    "full avg10=0.50 avg60=0.30 avg300=0.10 total=65432\n"
)


def io_line(dev: str, r: int, w: int, extra: str = "") -> str:
    """One ``io.stat`` line with ``r`` read and ``w`` written bytes (4 KiB per request)."""
    tail = f" {extra}" if extra else ""
    return f"{dev} rbytes={r} wbytes={w} rios={r // 4096} wios={w // 4096} dbytes=0 dios=0{tail}\n"


def write_cgroup(root: Path, path: str, files: Mapping[str, str]) -> None:
    """Make cgroup ``path`` under ``root`` with ``files``."""
    where = root / path.strip("/") if path != "/" else root
    where.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        (where / name).write_text(text)


def base_tree(base: Path, controllers: str = "cpuset cpu io memory pids") -> Path:
    """``proc/`` with diskstats and pressure, and an empty v2 root; returns the cgroup root."""
    (base / "proc" / "pressure").mkdir(parents=True, exist_ok=True)
    (base / "proc" / "diskstats").write_text(DISKSTATS)
    for name in ("io", "memory", "cpu"):
        (base / "proc" / "pressure" / name).write_text(PRESSURE)
    root = base / "sys" / "fs" / "cgroup"
    root.mkdir(parents=True, exist_ok=True)
    (root / "cgroup.controllers").write_text(controllers + "\n")
    (root / "cgroup.subtree_control").write_text(controllers + "\n")
    return root


def _v2(stat: str, procs: str = "", **extra: str) -> dict[str, str]:
    files = {"io.stat": stat, "io.pressure": PRESSURE, "cgroup.procs": procs}
    files.update({k.replace("_", "."): v for k, v in extra.items()})
    return files


def systemd_tree(base: Path, scale: int = 1) -> None:
    """systemd slices, a docker scope, Kubernetes pods (systemd driver), io.cost/io.latency keys.

    ``scale`` multiplies every counter: two trees with scale 1 and 2 are two samples.
    """
    s = scale
    root = base_tree(base)
    cost = "cost.vrate=100.00 cost.usage=1234 cost.wait=56 cost.indebt=0 cost.indelay=0"
    lat = "depth=64 avg_lat=1200 win=100"
    write_cgroup(
        root,
        "/",
        {
            "io.stat": io_line("8:0", 9000 * 4096 * s, 5000 * 4096 * s)
            + "253:0 \n"
            + io_line("8:16", 100 * 4096 * s, 0),
            "io.pressure": PRESSURE,
            "cgroup.procs": "1\n",
        },
    )
    write_cgroup(root, "/system.slice", _v2(io_line("8:0", 6000 * 4096 * s, 4000 * 4096 * s)))
    write_cgroup(
        root,
        "/system.slice/postgresql.service",
        _v2(
            io_line("8:0", 4000 * 4096 * s, 3000 * 4096 * s, cost),
            "4242\n",
            io_max="8:0 rbps=2097152 wbps=max riops=max wiops=120\n",
            io_weight="default 200\n8:0 300\n",
            io_latency="8:0 target=75000\n",
        ),
    )
    write_cgroup(
        root,
        "/system.slice/nginx.service",
        _v2(io_line("8:0", 1000 * 4096 * s, 0, lat), "4343\n4344\n", io_weight="default 100\n"),
    )
    write_cgroup(
        root,
        f"/system.slice/docker-{DOCKER_ID}.scope",
        _v2(io_line("8:0", 1000 * 4096 * s, 1000 * 4096 * s), "5000\n"),
    )
    write_cgroup(root, "/user.slice", _v2(io_line("8:0", 500 * 4096 * s, 0)))
    write_cgroup(
        root,
        "/user.slice/user-1000.slice/session-2.scope",
        _v2(io_line("8:0", 500 * 4096 * s, 0), "6000\n"),
    )
    kube = "/kubepods.slice"
    burst = f"{kube}/kubepods-burstable.slice"
    best = f"{kube}/kubepods-besteffort.slice"
    uid = POD_UID.replace("-", "_")
    write_cgroup(root, kube, _v2(io_line("8:0", 2500 * 4096 * s, 1000 * 4096 * s)))
    write_cgroup(root, burst, _v2(io_line("8:0", 2000 * 4096 * s, 1000 * 4096 * s)))
    write_cgroup(
        root,
        f"{burst}/kubepods-burstable-pod{uid}.slice",
        _v2(io_line("8:0", 2000 * 4096 * s, 1000 * 4096 * s)),
    )
    write_cgroup(
        root,
        f"{burst}/kubepods-burstable-pod{uid}.slice/cri-containerd-{CONTAINERD_ID}.scope",
        _v2(io_line("8:0", 2000 * 4096 * s, 1000 * 4096 * s), "7000\n"),
    )
    write_cgroup(root, best, _v2(io_line("8:0", 500 * 4096 * s, 0)))
    write_cgroup(
        root,
        f"{best}/kubepods-besteffort-pod{POD_UID_2.replace('-', '_')}.slice",
        _v2(io_line("8:0", 500 * 4096 * s, 0)),
    )
    write_cgroup(
        root, f"{kube}/kubepods-pod{POD_UID_3.replace('-', '_')}.slice", _v2(io_line("8:0", 0, 0))
    )
    proc = base / "proc"
    for pid, comm, cgroup in (
        (4242, "postgres", "/system.slice/postgresql.service"),
        (4343, "nginx", "/system.slice/nginx.service"),
        (4344, "nginx", "/system.slice/nginx.service"),
        (5000, "redis-server", f"/system.slice/docker-{DOCKER_ID}.scope"),
    ):
        (proc / str(pid)).mkdir(exist_ok=True)
        (proc / str(pid) / "comm").write_text(comm + "\n")
        (proc / str(pid) / "cgroup").write_text(f"0::{cgroup}\n")


def cgroupfs_tree(base: Path) -> None:
    """Docker and Kubernetes with the cgroupfs driver: ``/docker/<id>``, ``/kubepods/...``."""
    root = base_tree(base)
    write_cgroup(root, "/", {"io.stat": io_line("8:0", 8192, 8192)})
    write_cgroup(root, "/docker", _v2(io_line("8:0", 4096, 0)))
    write_cgroup(root, f"/docker/{DOCKER_ID}", _v2(io_line("8:0", 4096, 0), "100\n"))
    write_cgroup(root, "/kubepods", _v2(io_line("8:0", 4096, 8192)))
    write_cgroup(root, f"/kubepods/pod{POD_UID}", _v2(io_line("8:0", 4096, 0)))
    write_cgroup(root, f"/kubepods/pod{POD_UID}/{CONTAINERD_ID}", _v2(io_line("8:0", 4096, 0)))
    write_cgroup(root, "/kubepods/burstable", _v2(io_line("8:0", 0, 4096)))
    write_cgroup(root, f"/kubepods/burstable/pod{POD_UID_2}", _v2(io_line("8:0", 0, 4096)))
    write_cgroup(root, "/kubepods/besteffort", _v2(io_line("8:0", 0, 4096)))
    write_cgroup(root, f"/kubepods/besteffort/pod{POD_UID_3}", _v2(io_line("8:0", 0, 4096)))


def v1_blkio(read: int, write: int, dev: str = "8:0") -> dict[str, str]:
    """``blkio.throttle.io_service_bytes`` and ``io_serviced`` for one device."""

    def lines(r: int, w: int) -> str:
        return (
            f"{dev} Read {r}\n{dev} Write {w}\n{dev} Sync {r + w}\n{dev} Async 0\n"
            f"{dev} Discard 0\n{dev} Total {r + w}\nTotal {r + w}\n"
        )

    return {
        "blkio.throttle.io_service_bytes": lines(read, write),
        "blkio.throttle.io_serviced": lines(read // 4096, write // 4096),
        "cgroup.procs": "",
    }


def hybrid_tree(base: Path, scale: int = 1) -> None:
    """A hybrid host: v2 at ``unified`` without io (but with io.pressure), v1 ``blkio``."""
    s = scale
    cgroup = base / "sys" / "fs" / "cgroup"
    base_tree(base)
    (cgroup / "cgroup.controllers").unlink()
    (cgroup / "cgroup.subtree_control").unlink()
    unified = cgroup / "unified"
    write_cgroup(unified, "/", {"cgroup.controllers": "\n", "io.pressure": PRESSURE})
    write_cgroup(unified, "/system.slice/cron.service", {"io.pressure": PRESSURE})
    blkio = cgroup / "blkio"
    write_cgroup(blkio, "/", {**v1_blkio(0, 0), "blkio.throttle.io_service_bytes": "Total 0\n"})
    write_cgroup(blkio, "/system.slice", v1_blkio(4096 * s, 0))
    write_cgroup(blkio, "/system.slice/cron.service", v1_blkio(40960 * s, 8192 * s))
    write_cgroup(blkio, "/system.slice/ssh.service", v1_blkio(0, 4096 * s))


def synthetic_tree(
    base: Path, count: int, *, seed: int = 1, tick: int = 0, lean: bool = False
) -> list[str]:
    """A v2 tree of ``count`` cgroups (slices of services), counters growing with ``tick``.

    Each cgroup has the files a real one has that we read (io.stat with two devices,
    io.pressure, io.max, io.weight) and a dozen we do not. Writing the same tree with
    ``tick + 1`` is the next sample. ``lean`` writes only the files we read (tests of
    10,000 cgroups). Returns the cgroup paths.
    """
    rng = random.Random(seed)
    root = base_tree(base)
    filler = (
        *("cgroup.events", "cgroup.freeze", "cgroup.kill", "cgroup.max.depth", "cgroup.stat"),
        *("cgroup.type", "cpu.max", "cpu.stat", "cpu.weight", "memory.current", "memory.max"),
        *("memory.stat", "pids.current", "pids.max"),
    )
    paths = ["/"]
    slices = max(1, count // 50)
    for i in range(slices):
        paths.append(f"/s{i}.slice")
    while len(paths) < count:
        n = len(paths)
        paths.append(f"/s{n % slices}.slice/unit-{n}.service")
    for path in paths[:count]:
        r = rng.randrange(1, 20000)
        w = rng.randrange(1, 20000)
        t = tick + 1
        files = {
            "io.stat": io_line("8:0", r * 4096 * t, w * 4096 * t) + io_line("8:16", r * t, 0),
            "io.pressure": PRESSURE,
            "io.max": "",
            "io.weight": "default 100\n",
            "cgroup.procs": "",
            "memory.pressure": PRESSURE,
            "cpu.pressure": PRESSURE,
        }
        if not lean:
            files.update(dict.fromkeys(filler, "0\n"))
        write_cgroup(root, path, files)
    return paths[:count]


def bump_io_stat(base: Path, paths: list[str], tick: int, *, every: int = 1) -> None:
    """Rewrite ``io.stat`` of every ``every``-th cgroup with counters for ``tick``."""
    root = base / "sys" / "fs" / "cgroup"
    for i, path in enumerate(paths):
        if i % every:
            continue
        t = tick + 1
        where = root / path.strip("/") if path != "/" else root
        (where / "io.stat").write_text(
            io_line("8:0", (i + 1) * 4096 * t, (i + 2) * 4096 * t) + io_line("8:16", i * t, 0)
        )


def remove_live_cgroup(cgroup: Path, timeout_s: float = 5.0) -> bool:
    """Remove a real (empty) cgroup directory of a test; False if still there after
    ``timeout_s``: rmdir is EBUSY until the kernel has let the cgroup's last task go, which
    can be a moment after that task was reaped."""

    def removed() -> bool:
        try:
            cgroup.rmdir()
        except OSError:
            return False
        return True

    return holds_within(removed, timeout_s)
