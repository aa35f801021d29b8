"""`snapshot --format json` (live and `--from`) is iostat's document: the same key paths as
this host's real `S_TIME_FORMAT=ISO iostat -d -x -t -o JSON`, so one jq script reads both."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[2]

#: A jq program an iostat user already has: every device's %util in the last report.
JQ_UTIL = '.sysstat.hosts[0].statistics[-1].disk[] | "\\(.disk_device) \\(.util)"'
#: The host facts iostat prints beside its statistics.
HOST_KEYS = ("nodename", "sysname", "release", "machine", "number-of-cpus")


def key_paths(node: Any, prefix: str = "", empty: set[str] | None = None) -> set[str]:
    """jq-style paths of every key: ``.sysstat.hosts[].statistics[].disk[].util``. A cause's
    ``evidence`` is a map of whatever figures back it (the ruling's ``{figure: value}``), so its
    keys are not part of the shape. ``empty`` gathers the paths of empty lists (``.events[]``):
    what they would hold depends on what the host did meanwhile."""
    paths = {prefix} if prefix else set()
    if isinstance(node, dict) and not prefix.endswith(".evidence"):
        for key, value in node.items():
            paths |= key_paths(value, f"{prefix}.{key}", empty)
    elif isinstance(node, list):
        if not node and empty is not None:
            empty.add(f"{prefix}[]")
        for item in node:
            paths |= key_paths(item, f"{prefix}[]", empty)
    return paths


def iostat_doc() -> dict[str, Any]:
    if shutil.which("iostat") is None:
        pytest.skip("sysstat is not installed (make test installs it as root)")
    env = {**os.environ, "S_TIME_FORMAT": "ISO", "LC_ALL": "C"}
    out = subprocess.run(
        ["iostat", "-d", "-x", "-t", "-o", "JSON"],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    return json.loads(out)


def ours(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "iotop_plus", *argv],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def jq(program: str, doc: dict[str, Any]) -> list[str]:
    if shutil.which("jq") is None:
        pytest.skip("jq is not installed")
    done = subprocess.run(
        ["jq", "-r", program],
        input=json.dumps(doc),
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    )
    return done.stdout.splitlines()


def test_snapshot_json_has_iostats_sysstat_hosts_wrapper_and_key_paths() -> None:
    theirs = iostat_doc()
    run = ours("snapshot", "--format", "json", "--all", "-i", "0.2", "-c", "2")
    assert run.returncode == 0, run.stderr
    doc = json.loads(run.stdout)

    missing = key_paths(theirs) - key_paths(doc)
    assert not missing, f"iostat's key paths absent from ours: {sorted(missing)}"
    assert list(doc) == ["sysstat"] and list(doc["sysstat"]) == ["hosts"]
    (host,) = doc["sysstat"]["hosts"]
    (their_host,) = theirs["sysstat"]["hosts"]
    assert {k: host[k] for k in HOST_KEYS} == {k: their_host[k] for k in HOST_KEYS}
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", host["date"])
    # Both ran within a second or two; only a run across midnight may see two dates.
    assert host["date"] in (their_host["date"], host["statistics"][0]["timestamp"][:10])
    assert "host" not in host and "kernel" not in host
    assert (host["tool"], host["interval_s"]) == ("iotop-plus", 0.2)
    assert len(host["statistics"]) == 2
    for stat in host["statistics"]:
        assert {"timestamp", "elapsed_s", "no_rates", "pressure", "disk"} <= set(stat)

    # The same jq script reads both documents: one "DEVICE UTIL" line per device.
    for lines in (jq(JQ_UTIL, theirs), jq(JQ_UTIL, doc)):
        assert lines and all(re.fullmatch(r"\S+ \d+(\.\d+)?", line) for line in lines), lines
    their_names = {line.split()[0] for line in jq(JQ_UTIL, theirs)}
    our_names = {line.split()[0] for line in jq(JQ_UTIL, doc)}
    assert their_names <= our_names  # --all: every device iostat lists, and more


@pytest.mark.root
def test_snapshot_from_a_recording_prints_the_same_iostat_shape(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("record runs as root here (its state directory)")
    state = tmp_path / "state"
    record = subprocess.Popen(
        [sys.executable, "-m", "iotop_plus", "--state-dir", str(state), "record", "-i", "0.2"],
        cwd=REPO,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    recordings = state / "recordings"
    try:
        doc: dict[str, Any] | None = None
        for _ in range(300):  # up to ~60 s: until the recording holds two whole intervals
            run = ours("snapshot", "--from", str(recordings), "-f", "json", "--all")
            if run.returncode == 0:
                doc = json.loads(run.stdout)
                if len(doc["sysstat"]["hosts"][0]["statistics"]) >= 2:
                    break
            if record.poll() is not None:
                err = record.stderr.read() if record.stderr else ""
                pytest.fail(f"record exited {record.returncode}: {err}")
            record_wait(record)
        assert doc is not None, run.stderr
    finally:
        record.terminate()
        record.wait(timeout=30)
    live = json.loads(ours("snapshot", "-f", "json", "--all", "-i", "0.1").stdout)
    # A recording keeps no CPU times: its avg-cpu is null (the key is there).
    assert all(s["avg-cpu"] is None for s in doc["sysstat"]["hosts"][0]["statistics"])
    cpu = ".sysstat.hosts[].statistics[].avg-cpu."
    # A list empty in one (no device appeared, no event happened in that interval) says
    # nothing of the shape of its items: those paths are left out of both.
    empty: set[str] = set()
    recorded, now = key_paths(doc, empty=empty), key_paths(live, empty=empty)

    def shape(paths: set[str]) -> set[str]:
        return {p for p in paths if not any(p.startswith(e) for e in empty)}

    assert shape(recorded) == {p for p in shape(now) if not p.startswith(cpu)}
    (host,) = doc["sysstat"]["hosts"]
    assert host["nodename"] == live["sysstat"]["hosts"][0]["nodename"]
    for key in HOST_KEYS:  # the recorder stores sysname, machine and cpus in its header
        assert host[key] == live["sysstat"]["hosts"][0][key], key
    assert host["machine"] and host["number-of-cpus"]
    assert re.fullmatch(r"\d{4}-\d{2}-\d{2}", host["date"])
    assert jq(JQ_UTIL, doc)


def record_wait(proc: subprocess.Popen[str]) -> None:
    """Wait a moment for the recorder (it writes a sample every 0.2 s)."""
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=0.2)
