"""Per-cgroup I/O on this host: a v1 blkio child cgroup doing real I/O, and `top --by cgroup`.

The development machines are hybrid (v2 at /sys/fs/cgroup/unified without io, v1 blkio). On
kernels with lazily activated blk-throttle (6.x), v1's throttle counters count only on devices
that have a throttle rule: the test sets a rule far above anything it does (1 TiB/s).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from iotop_plus.roots import Roots
from iotop_plus.sampling.cgroups.reader import V1, CgroupReader, cgroup_rates_between, detect_layout

pytestmark = pytest.mark.slow  # real processes doing I/O for seconds

BLKIO = Path("/sys/fs/cgroup/blkio")
REPO = Path(__file__).resolve().parents[2]
HUGE = str(1 << 40)


def _whole_disk(path: Path) -> str:
    """``MAJ:MIN`` of the whole disk holding ``path`` (throttle rules take disks only)."""
    dev = os.stat(path).st_dev
    devno = f"{os.major(dev)}:{os.minor(dev)}"
    sysdev = Path("/sys/dev/block") / devno
    if (sysdev / "partition").exists():
        return (sysdev.resolve().parent / "dev").read_text().strip()
    return devno


@pytest.fixture
def blkio_child(tmp_path: Path) -> Iterator[tuple[str, str]]:
    if os.geteuid() != 0 or not (BLKIO / "blkio.throttle.io_service_bytes").exists():
        pytest.skip("needs root and a v1 blkio hierarchy")
    if detect_layout(Roots()).version != V1:
        pytest.skip("this host reads per-cgroup I/O from v2")
    name = f"iotop-plus-test-{os.getpid()}"
    child = BLKIO / name
    child.mkdir()
    disk = _whole_disk(tmp_path)
    try:
        try:
            for rule in ("read_bps_device", "write_bps_device"):
                (child / f"blkio.throttle.{rule}").write_text(f"{disk} {HUGE}\n")
        except OSError as exc:
            pytest.skip(f"cannot set a throttle rule on {disk}: {exc}")
        yield f"/{name}", disk
    finally:
        for _ in range(50):  # the dd child must be gone before the cgroup can go
            try:
                child.rmdir()
                break
            except OSError:
                time.sleep(0.1)


def _dd_in(cgroup: str, target: Path) -> None:
    # dd's own pages are read once outside the cgroup, so its exec adds no reads inside it.
    subprocess.run(["dd", "--version"], check=True, capture_output=True, timeout=60)
    script = (
        f"echo $$ > {BLKIO}{cgroup}/cgroup.procs && "
        f"dd if=/dev/zero of={target} bs=64k count=64 oflag=direct status=none && "
        f"dd if={target} of=/dev/null bs=64k iflag=direct status=none"
    )
    subprocess.run(["sh", "-c", script], check=True, timeout=60)


def test_a_v1_child_cgroup_doing_direct_io_gets_rates(
    blkio_child: tuple[str, str], tmp_path: Path
) -> None:
    cgroup, disk = blkio_child
    reader = CgroupReader(Roots())
    assert reader.layout.notice is not None and "has no io controller" in reader.layout.notice
    before = reader.sample()
    assert cgroup in before.cgroups
    _dd_in(cgroup, tmp_path / "dd.bin")
    after = reader.sample()
    rates = cgroup_rates_between(before, after)[cgroup]
    assert rates is not None
    elapsed = after.monotonic - before.monotonic
    # 4 MiB written and 4 MiB read with O_DIRECT, 64 requests each. Reads may add a little:
    # page-cache misses of the shell, dd's libraries or the file's metadata are charged to the
    # cgroup too (a clean CI clone once saw 80 KiB more), so reads get 256 KiB of slack upward.
    assert rates.devices[disk].write_bps * elapsed == pytest.approx(4 << 20, rel=0.01)
    read = rates.devices[disk].read_bps * elapsed
    assert (4 << 20) * 0.99 <= read <= (4 << 20) + (256 << 10)
    assert rates.total.write_iops * elapsed == pytest.approx(64, abs=2)
    # The root rolls its children up.
    root = cgroup_rates_between(before, after)["/"]
    assert root is not None and root.total.write_bps >= rates.total.write_bps


def test_top_by_cgroup_json_names_the_busy_cgroup(
    blkio_child: tuple[str, str], tmp_path: Path
) -> None:
    cgroup, _ = blkio_child
    cmd = [sys.executable, "-m", "iotop_plus", "top", "--by", "cgroup", "-f", "json"]
    proc = subprocess.Popen(
        [*cmd, "--count", "1", "--interval", "5"],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    # The notice is printed with the baseline frame's notes: the I/O after it is in the interval.
    assert proc.stderr is not None
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if "per-cgroup I/O comes from v1 blkio" in line:
            break
    _dd_in(cgroup, tmp_path / "dd.bin")
    out, rest = proc.communicate(timeout=60)
    err = "".join(seen) + rest
    assert proc.returncode == 0, err
    assert "per-cgroup I/O comes from v1 blkio" in err
    doc = json.loads(out)
    assert doc["cgroup_version"] == "v1"
    rows = {r["cgroup"]: r for r in doc["statistics"][0]["cgroups"]}
    row = rows[cgroup]
    assert set(row) >= {
        "cgroup",
        "name",
        "read_bps",
        "write_bps",
        "read_iops",
        "write_iops",
        "discard_bps",
        "io_some_avg10",
        "io_full_avg10",
        "devices",
    }
    assert row["write_bps"] * doc["statistics"][0]["elapsed_s"] == pytest.approx(4 << 20, rel=0.01)
    assert row["io_some_avg10"] is None  # no such cgroup in the unified tree: null, not 0
    assert "/" in rows


def test_as_an_unprivileged_user_an_unreadable_io_stat_is_one_warning() -> None:
    import shutil

    from tests.support.cgroup_trees import systemd_tree
    from tests.support.nobody import nobody_directory, nobody_env, nobody_python

    python = nobody_python()
    with nobody_directory() as base:
        systemd_tree(base)
        for path in base.rglob("*"):
            os.chmod(path, 0o755 if path.is_dir() else 0o644)
        locked = base / "sys/fs/cgroup/system.slice/nginx.service/io.stat"
        locked.chmod(0)
        cmd = [*python, "-m", "iotop_plus", "--proc-root", str(base / "proc")]
        cmd += ["--sys-root", str(base / "sys"), "top", "--by", "cgroup", "-f", "json"]
        cmd += ["-c", "1", "-i", "0.1", "-a"]
        proc = subprocess.run(
            cmd, capture_output=True, text=True, env=nobody_env("/usr/bin:/bin"), timeout=60
        )
        assert proc.returncode == 0, proc.stderr
        assert "Traceback" not in proc.stderr
        assert proc.stderr.splitlines() == [
            "iotop-plus: warning: cannot read /system.slice/nginx.service: Permission denied"
        ]
        rows = {r["cgroup"]: r for r in json.loads(proc.stdout)["statistics"][0]["cgroups"]}
        assert rows["/system.slice/nginx.service"]["read_bps"] is None
        assert rows["/system.slice/postgresql.service"]["read_bps"] == 0.0
        shutil.rmtree(base / "sys")
