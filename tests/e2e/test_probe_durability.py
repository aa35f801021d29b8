"""``probe durability`` with real fio: each method traced beside pg_test_fsync's same method,
the JSON on ext4 over a loop device, and memory filesystems.

The strace comparison reads, per run, the open flags of the probe file, the writes (size and
offset) and syncs on that descriptor, and finds the smallest pattern the run repeats: one op.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from iotop_plus.probe.durability_plan import PG_METHODS
from tests.support.mounts import unmount

pytestmark = [pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
PG_TEST_FSYNC = "/usr/lib/postgresql/15/bin/pg_test_fsync"
TRACED = "openat,pwrite64,write,fsync,fdatasync,lseek"
PG_ORDER = [(name, writes) for writes in (1, 2) for name in PG_METHODS]
OURS = ("-m", "iotop_plus")
KEPT_FLAGS = {"O_RDONLY", "O_WRONLY", "O_RDWR", "O_DSYNC", "O_SYNC", "O_DIRECT"}

_CALL = re.compile(r"^(?P<pid>\d+)\s+(?P<call>\w+)\((?P<args>.*?)(?:\)\s+= (?P<ret>-?\d+)|\s<unf)")
_RESUMED = re.compile(r"^(?P<pid>\d+)\s+<\.\.\. (?P<call>\w+) resumed>.*= (?P<ret>-?\d+)")


def iotop_plus(*args: str, state: Path, timeout: float = 240) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-m", "iotop_plus", "--state-dir", str(state), *args],
        capture_output=True,
        text=True,
        env=env,
        cwd="/",
        timeout=timeout,
    )


def need(path: str | None, what: str) -> str:
    if path is None or not os.access(path, os.X_OK):
        pytest.skip(f"{what} is not installed (make sysdeps installs it as root)")
    return path


def runs(trace: Path, probe_file: re.Pattern[str]) -> list[tuple[frozenset[str], list[tuple]]]:
    """Per open of a file matching ``probe_file``: its flags and the calls on that descriptor
    (``("pwrite64", size, offset)``, ``("fdatasync",)``...), in order, until it is opened
    again."""
    out: list[tuple[frozenset[str], list[tuple]]] = []
    live: dict[tuple[str, str], int] = {}  # (pid, fd) -> index in out
    pending: dict[str, tuple] = {}  # a call split by strace, by pid
    for line in trace.read_text().splitlines():
        m = _CALL.match(line)
        resumed = _RESUMED.match(line)
        if m is None and resumed is None:
            continue
        if m is not None:
            pid, call, args = m["pid"], m["call"], m["args"]
            if m["ret"] is None:  # "<unfinished ...>": counted when it resumes
                pending[pid] = (call, args)
                continue
            ret = m["ret"]
        else:
            assert resumed is not None
            pid, ret = resumed["pid"], resumed["ret"]
            if pid not in pending:
                continue
            call, args = pending.pop(pid)
        parts = [a.strip() for a in args.split(", ")]
        if call == "openat":
            path = parts[1].strip('"')
            if probe_file.search(path) and int(ret) >= 0:
                flags = frozenset(f for f in parts[2].split("|") if f in KEPT_FLAGS)
                live[(pid, ret)] = len(out)
                out.append((flags, []))
            else:
                live.pop((pid, ret), None)
            continue
        key = (pid, parts[0].rstrip(")"))
        if key not in live:
            continue
        calls = out[live[key]][1]
        if call == "pwrite64":
            calls.append((call, int(parts[-2]), int(parts[-1].rstrip(")"))))
        elif call in ("write", "lseek"):
            calls.append((call, parts[-1].rstrip(")")))
        else:
            calls.append((call,))
    return out


def one_op(calls: list[tuple]) -> tuple[tuple, ...]:
    """The shortest pattern the run repeats from its start (its last op may be cut)."""
    whole = len(calls) - len(calls) % 8 if len(calls) >= 16 else len(calls)
    for n in range(1, 9):
        body = calls[: whole - whole % n]
        if len(body) >= 4 * n and all(body[i] == body[i % n] for i in range(len(body))):
            return tuple(calls[:n])
    raise AssertionError(f"no repeating op in {calls[:20]}")


def test_each_method_does_what_pg_test_fsync_does(tmp_path: Path, fio_bin: str) -> None:
    strace = need(shutil.which("strace"), "strace")
    pg = need(PG_TEST_FSYNC, "pg_test_fsync (postgresql-15)")
    (tmp_path / "pg").mkdir()
    (tmp_path / "ours").mkdir()
    pg_trace, our_trace = tmp_path / "pg.trace", tmp_path / "ours.trace"
    pg_file = tmp_path / "pg" / "pg_test_fsync.out"
    subprocess.run(
        [
            strace,
            "-f",
            "-e",
            f"trace={TRACED}",
            "-o",
            str(pg_trace),
            pg,
            "-s",
            "1",
            "-f",
            str(pg_file),
        ],
        check=True,
        capture_output=True,
        timeout=240,
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    state = str(tmp_path / "state")
    command = [*OURS, "--state-dir", state, "probe", "durability", "-r", "1", "-q", "-t"]
    command.append(str(tmp_path / "ours"))
    subprocess.run(
        [strace, "-f", "-e", f"trace={TRACED}", "-o", str(our_trace), sys.executable, *command],
        check=True,
        capture_output=True,
        env=env,
        cwd="/",
        timeout=300,
    )
    theirs = runs(pg_trace, re.compile(re.escape(str(pg_file)) + "$"))
    # pg_test_fsync's first open lays the file out; then one open per method, in our order.
    _, layout_calls = theirs[0]
    assert sum(c[1] == "16777216" for c in layout_calls if c[0] == "write") == 1
    assert layout_calls.count(("fsync",)) == 1
    ours = runs(our_trace, re.compile(r"^/proc/self/fd/\d+/iotop-plus-probe-[^/]+$"))
    assert len(ours) == len(PG_ORDER) + 1  # fio's opens: the eight methods, then etcd's
    for (name, writes), (pg_flags, pg_calls), (our_flags, our_calls) in zip(
        PG_ORDER, theirs[1:], ours, strict=False
    ):
        assert our_flags == pg_flags, f"{name} x{writes}: open flags"
        assert one_op(our_calls) == one_op(pg_calls), f"{name} x{writes}: one op"
        syncs = [c for c in one_op(our_calls) if c[0] in ("fsync", "fdatasync")]
        assert len(syncs) == (0 if name.startswith("open_") else 1)
        writes_seen = [c for c in one_op(our_calls) if c[0] == "pwrite64"]
        assert writes_seen == [("pwrite64", 8192, 8192 * i) for i in range(writes)]
    # Our own lay-out: the probe made its file (O_EXCL), wrote 16 MiB and synced it once.
    made = runs(our_trace, re.compile(r"^iotop-plus-probe-[^/]+$"))
    laid = [calls for flags, calls in made if "O_WRONLY" in flags]
    assert len(laid) == len(PG_ORDER) + 1
    for calls in laid[: len(PG_ORDER)]:
        assert sum(int(c[1]) for c in calls if c[0] == "write") == 16 * 2**20
        assert calls.count(("fsync",)) == 1


@pytest.fixture
def ext4_dir(make_loop: Callable[..., str], tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """ext4 on a fresh 160 MiB loop device, mounted in the test's directory."""
    if os.geteuid() != 0:
        pytest.skip("needs root (loop devices and mount)")
    name = make_loop(160)
    subprocess.run(["mkfs.ext4", "-q", "-F", f"/dev/{name}"], check=True, timeout=60)
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    subprocess.run(["mount", f"/dev/{name}", str(mnt)], check=True, timeout=30)
    try:
        yield mnt, name
    finally:
        unmount(mnt)


def methods_of(doc: dict[str, Any]) -> dict[tuple[str, int], dict[str, Any]]:
    return {(m["name"], m["writes_per_op"]): m for m in doc["methods"]}


def test_probe_durability_json_on_ext4_over_a_loop_device(
    ext4_dir: tuple[Path, str], tmp_path: Path, fio_bin: str
) -> None:
    mnt, name = ext4_dir
    state = tmp_path / "state"
    done = iotop_plus(
        "probe", "durability", "--target", str(mnt), "--runtime", "1", "-f", "json", state=state
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    methods = methods_of(doc)
    assert list(methods) == [*PG_ORDER, ("etcd", 1)]
    for key, m in methods.items():
        assert m["reason"] is None, key
        assert m["ops_per_s"] > 0 and 0 < m["p50_us"] <= m["p99_us"], key
    assert doc["device"] == name
    assert doc["write_cache"] in ("write back", "write through")
    assert isinstance(doc["fua"], bool)
    assert doc["flush_p50_us"] is None  # only with --trace
    if doc["write_cache"] == "write back":
        assert doc["flush_mean_us"] is not None and doc["flush_mean_us"] >= 0
    assert doc["callout"] == "virtual device: durability depends on the host"
    assert doc["suggestion"]["wal_sync_method"] in PG_METHODS
    assert any("wal_sync_method" in line for line in doc["suggestion"]["lines"])
    lines = [json.loads(x) for x in (state / "probes.jsonl").read_text().splitlines()]
    tagged = [x for x in lines if x.get("plan") == "durability"]
    assert [(x["method"], x["writes_per_op"]) for x in tagged] == [*PG_ORDER, ("etcd", 1)]
    assert not list(mnt.glob(".iotop-plus-*")), "probe directories left behind"


def test_a_device_target_is_refused(ext4_dir: tuple[Path, str], tmp_path: Path) -> None:
    _, name = ext4_dir
    done = iotop_plus("probe", "durability", "--target", f"/dev/{name}", state=tmp_path / "s")
    assert done.returncode == 1
    assert "block device" in done.stderr and "Traceback" not in done.stderr


def pg_direct_refused(directory: Path) -> bool:
    """Whether pg_test_fsync prints n/a* for open_datasync in ``directory``."""
    out = subprocess.run(
        [need(PG_TEST_FSYNC, "pg_test_fsync"), "-s", "1", "-f", str(directory / "pgf")],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    line = next(x for x in out.splitlines() if x.strip().startswith("open_datasync"))
    return "n/a" in line


def test_on_tmpfs_the_o_direct_methods_agree_with_pg_test_fsync(
    mem_path: Path, tmp_path: Path, fio_bin: str
) -> None:
    """tmpfs takes O_DIRECT since Linux 6.6 and refuses it before: either way a method has
    figures exactly when pg_test_fsync has, and no figures is null with the reason."""
    done = iotop_plus(
        "probe", "durability", "--target", str(mem_path), "-r", "1", "-f", "json", state=tmp_path
    )
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    refused = pg_direct_refused(mem_path)
    for (name, _), m in methods_of(doc).items():
        if name.startswith("open_") and refused:
            assert m["ops_per_s"] is None and "O_DIRECT" in m["reason"]
        else:
            assert m["ops_per_s"] > 0 and m["reason"] is None
    assert doc["device"] is None
    assert doc["suggestion"]["wal_sync_method"] is None  # memory: nothing is durable


def test_o_direct_refused_on_ramfs_is_named(tmp_path: Path) -> None:
    """ramfs refuses O_DIRECT (and has no free space to size a probe by, so the probe itself
    refuses it): the lay-out step that decides null-with-reason says so on the real thing."""
    if os.geteuid() != 0:
        pytest.skip("needs root (mount)")
    from iotop_plus.probe.durability_plan import plan
    from iotop_plus.probe.run_types import DirectIORefused, ProbeRequest
    from iotop_plus.probe.runner import _lay_out
    from iotop_plus.probe.target import CheckedTarget, ProbeTarget
    from iotop_plus.probe.workdir import ProbeWorkdir

    ram = tmp_path / "ram"
    ram.mkdir()
    subprocess.run(["mount", "-t", "ramfs", "ramfs", str(ram)], check=True, timeout=30)
    try:
        fd = os.open(ram, os.O_RDONLY | os.O_DIRECTORY)
        workdir = ProbeWorkdir(fd, ram)
        target = ProbeTarget("file", ram, None, None, 16 * 2**20, readonly=False)
        with CheckedTarget(target, fd, workdir) as checked:
            method = plan(1)[0]
            request = ProbeRequest(
                method.preset, method.preset.params, str(ram), layout=method.layout
            )
            with pytest.raises(DirectIORefused, match="O_DIRECT"):
                _lay_out(request, checked)
            assert workdir.check_probe_file() is None
        assert not list(ram.iterdir()), "the probe directory was not removed"
    finally:
        unmount(ram)
