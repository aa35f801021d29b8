"""Names with any byte, through every text output of every command: a real cgroup, process
and mount point named with bytes that are not UTF-8, ESC, BEL and C1 controls, the process
doing I/O from that cgroup. Every command keeps running, writes valid UTF-8 with no ESC, BEL
or C1 control, and shows the names escaped (``\\xNN``); a recording keeps the name's bytes.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from iotop_plus.record.timeline import open_timeline
from tests.support.cli import cli_argv, cli_env, serve
from tests.support.hostile_host import CGROUP, COMM, HostileHost, hostile_host, printable_bytes
from tests.support.wait import holds_within

pytestmark = [pytest.mark.slow, pytest.mark.root]

_FORBIDDEN = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
"""Control characters but TAB and LF (ESC, BEL and the C1 block among them)."""


@pytest.fixture(scope="module")
def host(tmp_path_factory: pytest.TempPathFactory) -> Iterator[HostileHost]:
    with hostile_host(tmp_path_factory.mktemp("hostile")) as made:
        yield made


def clean(raw: bytes, what: str) -> str:
    """``raw`` decoded, checked to be UTF-8 with no control character but TAB and LF."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise AssertionError(f"{what}: not UTF-8: {exc}: {raw[:400]!r}") from None
    bad = _FORBIDDEN.search(text)
    assert bad is None, f"{what}: {bad.group()!r} at {bad.start()}: {text[:2000]!r}"
    return text


def strings(doc: object) -> str:
    """Every string in a JSON document (keys too), one per line."""
    if isinstance(doc, str):
        return doc
    if isinstance(doc, dict):
        return "\n".join(f"{k}\n{strings(v)}" for k, v in doc.items())
    if isinstance(doc, list):
        return "\n".join(map(strings, doc))
    return ""


def run(state: Path, *args: str, timeout: float = 60) -> str:
    """One command to its end; its stdout, once both streams are checked clean."""
    done = subprocess.run(
        cli_argv(*args, state=state), capture_output=True, timeout=timeout, env=cli_env(), cwd="/"
    )
    what = " ".join(args)
    out, err = clean(done.stdout, f"{what} stdout"), clean(done.stderr, f"{what} stderr")
    assert done.returncode == 0, f"{what} exited {done.returncode}: {err}"
    assert "Traceback" not in err, err
    return out


def test_every_command_writes_hostile_names_escaped(host: HostileHost, tmp_path: Path) -> None:
    state = tmp_path / "state"
    cgroup = printable_bytes(CGROUP)
    comm = printable_bytes(COMM)
    assert cgroup == "ux-\\xff\\xfe\\x1b]0;X\\x07\\x9b"
    one = ("--interval", "0.5", "--count", "2")
    for args in (
        ("snapshot", "--all", *one),
        ("snapshot", "--all", "--diagnose", *one),
        ("snapshot", "--all", "--issuers", *one),
        ("snapshot", "--all", "--format", "csv", *one),
        ("top", "--all", *one),
        ("top", "--all", "--threads", *one),
    ):
        run(state, *args)
    shown = run(state, "snapshot", "--all", "--issuers", "--format", "json", *one)
    text = strings(json.loads(shown))
    assert cgroup in text and comm in text, text
    by_cgroup = run(state, "top", "--by", "cgroup", *one)
    assert cgroup in by_cgroup, by_cgroup
    as_json = run(state, "top", "--by", "cgroup", "--format", "json", *one)
    assert cgroup in strings(json.loads(as_json))
    processes = run(state, "top", "--all", "--format", "json", *one)
    assert comm in strings(json.loads(processes))


def test_record_keeps_the_bytes_and_replays_them_escaped(host: HostileHost, tmp_path: Path) -> None:
    state = tmp_path / "state"
    recordings = state / "recordings"
    proc = subprocess.Popen(
        cli_argv("record", "--interval", "0.5", state=state),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=cli_env(),
        cwd="/",
    )
    try:
        assert holds_within(lambda: any(recordings.glob("*.rec")), 20), "a recording file"
        path = next(recordings.glob("*.rec"))
        # Some frames with the cgroup doing I/O: the file grows as samples go in.
        assert holds_within(lambda: proc.poll() is not None or path.stat().st_size > 8192, 30)
        assert proc.poll() is None, proc.stderr.read() if proc.stderr else ""
    finally:
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=20)
    clean(out, "record stdout")
    assert proc.returncode == 0, clean(err, "record stderr")
    timeline = open_timeline(path)
    try:
        span = timeline.span()
        assert span is not None
        recorded = list(timeline.frames(*span))
        seen = {p for _, f in recorded if f.cgroups is not None for p in f.cgroups.sample.cgroups}
        comms = {p.get("comm") for rs, _ in recorded for p in rs.processes or ()}
    finally:
        timeline.close()
    assert host.cgroup in seen, sorted(seen)  # the very bytes, as os.fsdecode holds them
    assert os.fsdecode(COMM) in comms, comms
    run(state, "snapshot", "--from", str(path), "--issuers", "--diagnose", "--all")
    run(state, "snapshot", "--from", str(path), "--format", "json", "--all")
    run(state, "snapshot", "--from", str(path), "--format", "csv", "--all")


def test_serve_exports_hostile_names_as_clean_labels(host: HostileHost, tmp_path: Path) -> None:
    with serve("--all", state=tmp_path / "state", interval="0.5") as port:

        def scraped() -> str:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
                return clean(r.read(), "metrics")

        label = printable_bytes(CGROUP).replace("\\", "\\\\")  # the exposition's escape
        assert holds_within(lambda: f'cgroup="/{label}-' in scraped(), 20), scraped()
        body = scraped()
    check = subprocess.run(
        ["promtool", "check", "metrics"], input=body.encode(), capture_output=True, timeout=30
    )
    assert check.returncode == 0, check.stdout + check.stderr
    assert os.fsdecode(CGROUP) not in body
