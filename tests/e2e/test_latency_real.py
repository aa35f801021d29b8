"""The latency tracer for real: bpftrace on loop devices, against fio, and how it fails and
dies (missing program, not root, killed mid-run, a vanished device, signals to the parent)."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iotop_plus.probe.block_latency import PROBE_SAMPLE
from iotop_plus.programs import search_path_override
from iotop_plus.sampling.disks.diskstats import parse_diskstats
from iotop_plus.sampling.frame.live import LiveSource
from iotop_plus.sampling.frame.model import LATENCY, LATENCY_QUEUE, Frame
from iotop_plus.sampling.latency.hist import (
    FAILED,
    RUNNING,
    DeviceLatency,
    Histogram,
    bucket_bounds,
    bucket_of,
)
from iotop_plus.sampling.latency.part import LatencyPart
from iotop_plus.sampling.latency.program import MARKER
from iotop_plus.sampling.latency.tracer import MAP_KEYS_MAX, Tracer
from tests.support.bpf_misses import tracer_misses
from tests.support.loopdev import attach, detach, remove_node, require_loop_devices
from tests.support.nobody import nobody_env, nobody_python
from tests.support.wait import holds_within

# Every test here starts bpftrace, fio or the console script for seconds.
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[2]


def need_tracer() -> None:
    if os.geteuid() != 0:
        pytest.skip("needs root (bpftrace)")
    if shutil.which("bpftrace") is None:
        pytest.skip("bpftrace is not installed (make sysdeps installs it)")


def tracers_of(pid: int) -> list[int]:
    """bpftrace children started by process ``pid`` (their program's first line names it)."""
    found = subprocess.run(
        ["pgrep", "-f", f"{MARKER} pid={pid}( |$)"], capture_output=True, text=True, check=False
    )
    return [int(p) for p in found.stdout.split()]


def fio_randread(
    dev: str, seconds: float, *extra: str, realtime: bool = False
) -> subprocess.Popen[str]:
    # realtime: fio at SCHED_FIFO 1, so on a busy machine its clat is not mostly time spent
    # waiting for a CPU (that once made fio's p99 ten times the block time). It sleeps in
    # every read (QD1, psync), so it cannot starve the machine.
    chrt = ["chrt", "-f", "1"] if realtime and shutil.which("chrt") else []
    return subprocess.Popen(
        [
            *chrt,
            "fio",
            "--name=lat",
            f"--filename=/dev/{dev}",
            "--rw=randread",
            "--bs=4k",
            "--direct=1",
            "--ioengine=psync",
            "--iodepth=1",
            "--readonly",
            "--thread",  # jobs are threads: killing fio stops its I/O at once
            "--time_based",
            f"--runtime={seconds}",
            "--output-format=json",
            *extra,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def traced_source(part: str = LATENCY) -> LiveSource:
    source = LiveSource()
    source.want(part, True)
    assert source.wait_latency(15), "the tracer did not start"
    return source


@pytest.mark.root
def test_percentiles_agree_with_fio_randread_qd1(make_loop, fio_bin) -> None:
    """Block time excludes the syscall: our p50/p99 are at most fio's clat, and at least half.

    The p99's lower bound is the host's as much as ours: a vCPU stolen (or an interrupt storm)
    between a completion and fio's wake-up adds to fio's time only, and at the 1 % tail a
    few such stalls doubled fio's p99 once in CI (346 against our 153 us). So that one bound
    may take up to three runs; every other bound holds in every run, and a tracer that
    under-measures the tail fails all three."""
    need_tracer()
    # A filled backing file: reads reach the disk below, so block time is most of fio's
    # time (on a sparse file they cost less than the syscall around them).
    dev = make_loop(32, direct_io=True, filled=True)
    source = traced_source()
    tails: list[tuple[float, float]] = []
    try:
        source.next_frame()
        for _ in range(3):
            missed = tracer_misses()
            fio = fio_randread(dev, 3, realtime=True)
            out, err = fio.communicate(timeout=60)
            frame = source.next_frame()
            assert fio.returncode == 0, err
            fio_p99, p99 = _agreeing_run(dev, out, frame, tracer_misses() - missed)
            tails.append((p99, fio_p99))
            if fio_p99 / 2 <= p99:
                return
    finally:
        source.close()
    pytest.fail(f"our p99 was under half of fio's in three runs (ours, fio's, ns): {tails}")


def _agreeing_run(dev: str, out: str, frame: Frame, skipped: int) -> tuple[float, float]:
    """Check one fio run against the frame after it; give (fio's p99, ours) in ns for the
    caller's tail bound. ``skipped``: runs of the tracer's programs the kernel skipped
    meanwhile (each loses at most one request)."""
    job = json.loads(out[out.index("{") :])["jobs"][0]["read"]
    clat = job["clat_ns"]["percentile"]
    lat = frame.latency
    assert lat is not None and lat.state == RUNNING, lat
    ours = lat.devices[dev].op("read")
    fio_p50, fio_p99 = clat["50.000000"], clat["99.000000"]
    p50, p99 = ours.percentile(50), ours.percentile(99)
    print(f"p50 ours {p50:.0f} ns fio {fio_p50} ns; p99 ours {p99:.0f} ns fio {fio_p99} ns")
    assert p50 is not None and p99 is not None
    # at most fio's: the bucket holding ours starts at or below fio's (see _bucket_low_us)
    assert fio_p50 / 2 <= p50 and _bucket_low_us(p50 / 1000) <= fio_p50 / 1000 * (1 + 1 / 128)
    assert _bucket_low_us(p99 / 1000) <= fio_p99 / 1000 * (1 + 1 / 128)
    # every request fio completed was seen once (fio's count is per job, ours per device),
    # but for those whose probe the kernel skipped
    total = job["total_ios"]
    assert -skipped - 0.01 * total - 5 <= ours.count - total <= 0.01 * total + 5, skipped
    return fio_p99, p99


CAPTURE = """
BEGIN { printf("attached\\n"); }
tracepoint:block:block_rq_issue /args->dev == DEV/ { @s[args->sector] = nsecs; }
tracepoint:block:block_rq_complete /args->dev == DEV/ {
  $t = @s[args->sector];
  if ($t) { delete(@s[args->sector]); @req[args->dev, nsecs] = nsecs - $t; }
}
END { clear(@s); }
"""
"""Every request's exact block time, kept in a map printed at exit (``@req[dev, done]: ns``).
``BEGIN`` runs once every probe is attached: bpftrace prints "Attaching" before it attaches.

Not a ``printf`` per request: a perf-buffer write and its wake-up run between this program's
completion stamp and the tracer's (both programs run at each tracepoint, one after the other),
and that put about 15 us into every one of our times, most of the 15 % bound at 100 us."""


def stop_capture(capture: subprocess.Popen[bytes]) -> None:
    """SIGINT, which makes bpftrace print its maps and exit; again each second until it does.

    bpftrace 0.17 can take the signal just before it enters ``epoll_wait`` and then sleep
    there for good: a program that sends no event never wakes it (seen beside the busy host:
    the signal caught, none pending, the process in ``do_epoll_wait`` a minute later). A later
    signal interrupts that wait; one that comes while it prints is ignored."""
    deadline = time.monotonic() + 60
    while True:
        capture.send_signal(signal.SIGINT)
        try:
            capture.wait(timeout=1)
            return
        except subprocess.TimeoutExpired:
            if time.monotonic() > deadline:
                capture.kill()
                capture.wait()
                return


def side_by_side(ours: Histogram, theirs: Histogram) -> str:
    """Both histograms' counts bucket by bucket, with each one's share of requests at or below
    it: where two percentiles part, this shows whether the requests or the arithmetic differ."""
    rows, mine, other = [], 0, 0
    for index in sorted(set(ours.buckets) | set(theirs.buckets)):
        a, b = ours.buckets.get(index, 0), theirs.buckets.get(index, 0)
        mine, other = mine + a, other + b
        low = bucket_bounds(index)[0]
        rows.append(
            f"{low / 1000:9.1f}us {a:5d} {b:5d}"
            f" {100 * mine / max(ours.count, 1):6.2f}% {100 * other / max(theirs.count, 1):6.2f}%"
        )
    return "\n".join(["   bucket  ours  theirs  cum.ours cum.theirs", *rows])


def exact_percentile(values: list[int], rank: float) -> float:
    """The nearest-rank percentile (the value below which ``rank`` % of the requests are)."""
    ordered = sorted(values)
    return float(ordered[max(0, min(len(ordered) - 1, int(-(-len(ordered) * rank // 100)) - 1))])


@pytest.mark.root
def test_percentiles_are_within_15_percent_of_a_per_request_capture(
    make_loop, fio_bin, tmp_path
) -> None:
    """A second bpftrace prints every request's block time; at 400 IOPS the tracer's p50, p90
    and p99 of the same requests (8 s of them) are within 15 % of the exact ones (the issue's bound;
    a bucket is 1/8 of its lower edge wide)."""
    need_tracer()
    dev = make_loop(32, direct_io=True, filled=True)
    minor = int(Path(f"/sys/class/block/{dev}/dev").read_text().split(":")[1])
    dev_t = (7 << 20) | minor  # the tracepoints' dev_t: MKDEV(major, minor)
    log = tmp_path / "capture.txt"  # a file, not a pipe: a full pipe would stall bpftrace
    with open(log, "w") as sink:
        # Only the test's device is kept, in a map with room for every request of the run.
        capture = subprocess.Popen(
            ["bpftrace", "-e", CAPTURE.replace("DEV", str(dev_t))],
            stdout=sink,
            stderr=sink,
            env={**os.environ, "BPFTRACE_MAP_KEYS_MAX": "65536"},
        )
    source = None
    try:
        assert holds_within(lambda: "attached" in log.read_text(), 60), log.read_text()
        source = traced_source()
        source.next_frame()
        missed = tracer_misses()
        # 8 s: 3,200 requests, so the p99 is the 32nd slowest; at 4 s (the 16th) the few
        # requests the two tracers did not share moved it to another bucket once in 25 runs.
        fio = fio_randread(dev, 8, "--rate_iops=400")
        _, err = fio.communicate(timeout=60)
        frame = source.next_frame()
        skipped = tracer_misses() - missed
    finally:
        if source is not None:
            source.close()
        stop_capture(capture)  # prints the map; SIGKILL would not
    assert fio.returncode == 0, err
    lines = log.read_text().splitlines()
    kept = re.compile(rf"^@req\[{dev_t}, \d+\]: (\d+)$")
    exact = [int(m.group(1)) for m in map(kept.match, lines) if m]
    assert frame.latency is not None
    ours = frame.latency.devices[dev].op("read")
    # each run of either tracer's programs that the kernel skipped loses one request
    assert len(exact) > 1000, (capture.returncode, len(lines), lines[:5], lines[-5:])
    assert abs(ours.count - len(exact)) <= 0.01 * len(exact) + 2 + skipped, skipped
    theirs = Histogram.of(exact)
    for rank in (50, 90, 99):
        got, want = ours.percentile(rank), exact_percentile(exact, rank)
        assert got is not None and abs(got - want) <= 0.15 * want, (
            rank,
            got,
            want,
            side_by_side(ours, theirs),
        )
    # (not the max: it is one request, and either tracer can miss it, see BlindWatch)


@pytest.mark.root
def test_snapshot_latency_counts_exactly_the_interval_printed(make_loop, fio_bin) -> None:
    """The requests traced in each interval are the reads diskstats counts in it, within 2 %.

    The interval's ends are not one instant: the tracer's is where bpftrace's own process
    prints and clears its maps after the marker, diskstats' where the sampler reads it once it
    has seen that print. Beside the busy host (load 5-10 on two cores) the two were up to 35 ms
    apart (765 of 22,000 requests at 1 s), so the intervals are 2 s long."""
    need_tracer()
    dev = make_loop(64, direct_io=True)
    fio = fio_randread(dev, 600)  # killed below: runs however long the tracer takes to start
    try:
        time.sleep(0.5)
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "iotop_plus",
                "snapshot",
                "--latency",
                "-f",
                "json",
                "--interval",
                "2",
                "--count",
                "2",
                dev,
            ],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=REPO,
            check=False,
        )
    finally:
        fio.kill()
        fio.wait()
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    for stat in doc["sysstat"]["hosts"][0]["statistics"]:
        (disk,) = stat["disk"]
        lat = disk["latency"]
        assert set(lat) >= {"read", "write", "queue_ms_mean", "device_ms_mean"}
        assert set(lat["read"]) == {"p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms", "count"}
        reads = disk["r/s"] * stat["elapsed_s"]
        assert reads > 500
        assert abs(lat["read"]["count"] - reads) <= 0.02 * reads + 5, (lat, reads)
        assert lat["read"]["p50_ms"] <= lat["read"]["p99_ms"] <= lat["read"]["max_ms"]
        assert lat["write"]["count"] == 0
    assert tracers_of(os.getpid()) == []


@pytest.mark.root
def test_bpftrace_missing_is_one_line(tmp_path: Path) -> None:
    if os.geteuid() != 0:
        pytest.skip("as root, the lookup ignores PATH: this is the root case")
    empty = tmp_path / "bin"
    empty.mkdir()
    with search_path_override([str(empty)]):
        part = LatencyPart()
        frame = part.frame({}, time.monotonic())
    assert frame.state == FAILED and part.tracer is None
    assert frame.status is not None and "\n" not in frame.status
    assert (
        "bpftrace is not installed" in frame.status and "apt-get install bpftrace" in frame.status
    )


def test_not_root_snapshot_says_so_and_reports_the_rest(tmp_path: Path) -> None:
    """As nobody, with a PATH that lacks bpftrace: latency is null, one stderr line, exit 0."""
    argv = nobody_python()
    empty = tmp_path / "bin"
    empty.mkdir(mode=0o755)
    os.chmod(tmp_path, 0o755)
    done = subprocess.run(
        [
            *argv,
            "-m",
            "iotop_plus",
            "snapshot",
            "--latency",
            "-f",
            "json",
            "--all",
            "--interval",
            "0.3",
            "--count",
            "1",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd="/",
        check=False,
        env=nobody_env(str(empty)),
    )
    assert done.returncode == 0, done.stderr
    lines = [line for line in done.stderr.splitlines() if "latency" in line]
    assert len(lines) == 1 and "needs root" in lines[0], done.stderr
    disks = json.loads(done.stdout)["sysstat"]["hosts"][0]["statistics"][0]["disk"]
    assert disks and all(d["latency"] is None for d in disks)
    assert all("r/s" in d for d in disks)


@pytest.mark.root
def test_bpftrace_killed_mid_run_is_said_and_restartable(make_loop) -> None:
    need_tracer()
    dev = make_loop(16, direct_io=True)
    source = traced_source()
    try:
        first = source.next_frame()
        assert first.latency is not None and first.latency.state == RUNNING
        (pid,) = tracers_of(os.getpid())
        os.kill(pid, signal.SIGKILL)
        # Gone from pgrep is not gone: a killed bpftrace loses its command line first, then
        # spends a while detaching its probes before it exits. Wait until its reader reaped it.
        assert holds_within(lambda: not os.path.exists(f"/proc/{pid}"), 5)
        frame = source.next_frame()
        lat = frame.latency
        assert lat is not None and lat.state == FAILED
        assert lat.status is not None and "killed by SIGKILL" in lat.status
        assert "\n" not in lat.status
        assert frame.rates.get(dev) is not None  # the disk figures keep coming
        source.want(LATENCY, False)  # off and on again restarts it
        source.next_frame()
        source.want(LATENCY, True)
        assert source.wait_latency(15)
        again = source.next_frame()
        assert again.latency is not None and again.latency.state == RUNNING
        assert len(tracers_of(os.getpid())) == 1
    finally:
        source.close()
    assert holds_within(lambda: tracers_of(os.getpid()) == [], 5)


@pytest.mark.root
def test_device_that_vanishes_while_traced(tmp_path: Path) -> None:
    need_tracer()
    require_loop_devices()
    backing = tmp_path / "gone.img"
    with open(backing, "xb") as fh:
        fh.truncate(16 * 1024 * 1024)
    dev = attach(backing, direct_io=True)
    node = f"/dev/{dev}"
    source = traced_source(LATENCY_QUEUE)
    try:
        source.next_frame()
        subprocess.run(
            ["dd", f"if={node}", "of=/dev/null", "bs=4k", "count=500", "iflag=direct"],
            check=True,
            capture_output=True,
        )
        # A frame ends at a tick that ended up to 20 ms ago (ALIGN_SLACK_NS), or at a marker
        # it waits for at most 50 ms (MARK_WAIT_S; then the rest comes with the next frame):
        # a dd that quick can land in later frames, so count over them until it shows up. Three
        # were not always enough on a loaded CI host (499 of 500 once).
        counted = 0
        notices = []  # a tracer restarted (blind, or switched to sampling) loses what is in flight
        for _ in range(20):
            seen = source.next_frame()
            assert seen.latency is not None
            notices.append(seen.latency.notice)
            got = seen.latency.devices.get(dev)
            counted += got.op("read").count if got is not None else 0
            if counted >= 500:
                break
        said = [n for n in notices if n]
        if any("timing 1 request in" in n for n in said):
            # Other tests' devices (4 workers) took the traced host over 20,000 requests a
            # second: the tracer switched to timing 1 request in 8, and its counts are
            # estimates from then on (499 once in CI).
            assert 350 <= counted <= 650, said
        else:
            assert counted == 500, said
        detach(dev, backing)
        remove_node(dev)  # detached loop nodes stay: remove it (a serial test: conftest SERIAL)
        assert holds_within(lambda: not Path(f"/sys/block/{dev}").exists(), 5)
        after: Frame = source.next_frame()
        assert dev not in after.sample.counters
        assert after.latency is not None and after.latency.state == RUNNING
        assert dev not in after.latency.devices
    finally:
        source.close()
        detach(dev, backing)


@pytest.mark.root
def _default_stop_signals() -> None:
    for signum in (signal.SIGHUP, signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)


@pytest.mark.parametrize("signum", [signal.SIGHUP, signal.SIGTERM, signal.SIGINT, signal.SIGKILL])
def test_snapshot_signals_leave_no_tracer(signum: int) -> None:
    """Quit, hang-up, terminate or crash (SIGKILL) of the parent: bpftrace never outlives it."""
    need_tracer()
    proc = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "iotop_plus",
            "snapshot",
            "--latency",
            "--interval",
            "0.5",
            "--count",
            "100",
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=REPO,
        # The snapshot is killed as a user's shell would: a test run started under nohup or
        # as a background job inherits SIGHUP or SIGINT ignored, and so would its child.
        preexec_fn=_default_stop_signals,
    )
    try:
        assert holds_within(lambda: len(tracers_of(proc.pid)) == 1, 15), "no tracer started"
        time.sleep(0.5)
        proc.send_signal(signum)
        proc.wait(timeout=15)
        assert holds_within(lambda: tracers_of(proc.pid) == [], 5), tracers_of(proc.pid)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_device_latency_of_an_idle_device_is_zero_counts() -> None:
    empty = DeviceLatency({}).to_json()
    assert empty["read"]["count"] == 0 and empty["device_ms_mean"] is None  # type: ignore[index]


@pytest.mark.root
@pytest.mark.parametrize("how", ["quit", "SIGHUP", "hangup"])
def test_tui_quit_and_hangup_leave_no_tracer(how: str) -> None:
    """The TUI with the latency columns shown: `q`, SIGHUP, or the terminal closing."""
    need_tracer()
    from tests.e2e.test_tui_tmux import STATE_DIR, console_script, wait_for_table
    from tests.support.tmux import TmuxSession, tmux_available

    reason = tmux_available()
    if reason:
        pytest.skip(reason)
    with TmuxSession(120, 36) as tmux:
        launched = tmux.launch([console_script(), "--state-dir", STATE_DIR, "--interval", "0.5"])
        wait_for_table(tmux)
        pid = tmux.program_pid(launched)
        tmux.send_keys("c")
        tmux.send_keys("c")
        assert holds_within(lambda: len(tracers_of(pid)) == 1, 15), "no tracer started"
        tmux.wait_for(re.compile(r"time in queue|latency: "), timeout=15)
        if how == "quit":
            tmux.send_keys("q")
            assert tmux.wait_exit(launched, timeout=10) == 0
        elif how == "SIGHUP":
            os.kill(pid, signal.SIGHUP)
            tmux.wait_exit(launched, timeout=10)
        else:
            tmux.tmux("kill-pane", "-t", tmux.name)
        assert holds_within(lambda: not Path(f"/proc/{pid}").exists(), 10)
        assert holds_within(lambda: tracers_of(pid) == [], 5), tracers_of(pid)


@pytest.mark.root
def test_a_tracer_whose_stamp_map_is_full_is_restarted(make_loop, fio_bin) -> None:
    """A full map of issue stamps (completions the kernel did not report pile up in it on a
    busy host, see BlindWatch) makes the tracer blind; the part notices from the disk's own
    counters and starts a new one. Here the first tracer's maps hold 16 keys, fewer than the
    32 requests fio keeps in flight, so it is blind from the start."""
    need_tracer()
    dev = make_loop(64, direct_io=True)
    made: list[Tracer] = []

    def make() -> Tracer:
        made.append(Tracer(queue=False, map_keys=16 if not made else MAP_KEYS_MAX))
        return made[-1]

    # every request timed: a busy device's switch to sampling (#25) would restart it too
    part = LatencyPart(queue=False, make_tracer=make, sample=1)
    fio = fio_randread(dev, 20, "--ioengine=io_uring", "--iodepth=32")
    notices: list[str] = []
    shares: list[float] = []
    try:
        assert part.wait_ready(15)
        deadline = time.monotonic() + 15
        prev = parse_diskstats(Path("/proc/diskstats").read_text())
        while time.monotonic() < deadline and len(shares) < 3:
            time.sleep(1)
            part.align()
            now = time.monotonic()
            counters = parse_diskstats(Path("/proc/diskstats").read_text())
            frame = part.frame(counters, now)
            if frame.notice:
                notices.append(frame.notice)
            done = counters[dev].reads - prev[dev].reads
            prev = counters
            if notices and frame.state == RUNNING and dev in frame.devices:
                shares.append(frame.devices[dev].op("read").count / max(done, 1))
    finally:
        fio.kill()
        fio.wait()
        part.close()
    assert len(made) == 2, notices
    assert any("restarted" in n and "filled up" in n for n in notices), notices
    # the new tracer sees the requests again (the frame after a restart may be partial)
    assert shares and max(shares) > 0.9, shares
    assert holds_within(lambda: tracers_of(os.getpid()) == [], 5)


def _bucket_low_us(value_us: float) -> float:
    """Where the histogram bucket holding ``value_us`` starts, in µs (a value at a bucket's
    top edge counts in the bucket below it)."""
    return bucket_bounds(bucket_of(max(round(value_us * 1000) - 1, 1)))[0] / 1000


@pytest.mark.root
def test_probe_shows_device_side_percentiles_next_to_fios(make_loop, fio_bin, tmp_path) -> None:
    """The probe command traces the device while fio runs: device p50/p99 are at most fio's
    clat, counts match fio's, and no tracer is left.

    psync, because its clat covers the whole pread, so each request's block time lies inside
    it. io_uring (the default) starts clat when io_uring_enter returns, after the request
    was issued: on a busy CPU its device p50 came out above fio's clat p50 (71 vs 62 µs),
    and a CI run saw device p99 464 µs over clat p99 408 µs."""
    need_tracer()
    dev = make_loop(32, direct_io=True, filled=True)
    done = subprocess.run(
        [sys.executable, "-m", "iotop_plus", "--state-dir", str(tmp_path / "state"),
         "probe", "randread", "-t", f"/dev/{dev}",
         "-r", "2", "-q", "-f", "json", "-s", "iodepth=1", "-s", "ioengine=psync", "--trace"],
        capture_output=True, text=True, timeout=120, cwd=REPO, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    doc = json.loads(done.stdout)
    read = doc["read"]
    block = read["block"]
    assert block is not None, doc["notes"]
    fio_pcts, ours = dict(read["clat"]["percentiles_us"]), dict(block["percentiles_us"])
    assert set(ours) == {"p50", "p99", "p99.9"}
    assert 0 < ours["p50"] <= ours["p99"] <= ours["p99.9"] <= block["max_us"]
    # ours are interpolated inside a bucket 1/8 wide, fio's are its bucket's middle (1/64
    # wide): the bucket holding our percentile must start at or below fio's
    for rank in ("p50", "p99"):
        assert _bucket_low_us(ours[rank]) <= fio_pcts[rank] * (1 + 1 / 128), (rank, ours, fio_pcts)
    # one request in PROBE_SAMPLE is timed, chosen on its sector (#25), and it says so; the
    # count is the tracer's estimate (each timed request weighs PROBE_SAMPLE: random
    # sectors, binomial, a few % apart); a few completions are not reported to BPF under
    # load (see BlindWatch)
    assert block["sampled"] == PROBE_SAMPLE > 1
    assert abs(block["count"] - read["total_ios"]) <= 0.1 * read["total_ios"]
    assert doc["write"] is None
    plain = subprocess.run(
        [sys.executable, "-m", "iotop_plus", "--state-dir", str(tmp_path / "state"),
         "probe", "randread", "-t", f"/dev/{dev}",
         "-r", "1", "-q", "--no-trace"],
        capture_output=True, text=True, timeout=120, cwd=REPO, check=False,
    )  # fmt: skip
    assert plain.returncode == 0, plain.stderr
    assert "device µs" not in plain.stdout and "not traced" not in plain.stdout
    assert subprocess.run(["pgrep", "-f", MARKER], capture_output=True, check=False).stdout == b""


_HOLDER = """
import sys, time
from iotop_plus.sampling.latency.part import Tracer
prefix = None if sys.argv[1] == "pdeathsig" else (sys.argv[2],)
t = Tracer(queue=False, tag="pdeathsig-test", argv_prefix=prefix)
t.start()
t.ready.wait(15)
print(t.pid, t._proc.stdout.fileno(), t._proc.stderr.fileno(), flush=True)
time.sleep(600)
"""


def _tracer_after_parent_sigkill(mode: str) -> tuple[int, bool]:
    """Start a tracer in a child Python, hold the tracer's output pipes open ourselves (so
    bpftrace cannot die of SIGPIPE), SIGKILL that parent; (tracer pid, tracer gone in 3 s)."""
    parent = subprocess.Popen(
        [sys.executable, "-c", _HOLDER, mode, str(shutil.which("bpftrace"))],
        stdout=subprocess.PIPE,
        text=True,
        cwd=REPO,
    )
    held: list[int] = []
    try:
        assert parent.stdout is not None
        pid, out_fd, err_fd = (int(x) for x in parent.stdout.readline().split())
        held = [os.open(f"/proc/{parent.pid}/fd/{fd}", os.O_RDONLY) for fd in (out_fd, err_fd)]
        parent.kill()
        parent.wait()
        gone = holds_within(lambda: not Path(f"/proc/{pid}").exists() or _zombie(pid), 3)
        return pid, gone
    finally:
        if parent.poll() is None:
            parent.kill()
            parent.wait()
        for fd in held:
            os.close(fd)


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except (OSError, IndexError):
        return True


@pytest.mark.root
def test_the_parent_death_signal_alone_kills_the_tracer() -> None:
    """With its pipes still open elsewhere, only PR_SET_PDEATHSIG can kill bpftrace when its
    parent is SIGKILLed; without setpriv's --pdeathsig the same tracer lives on."""
    need_tracer()
    pid, gone = _tracer_after_parent_sigkill("pdeathsig")
    assert gone, f"bpftrace {pid} outlived its SIGKILLed parent"
    pid, gone = _tracer_after_parent_sigkill("plain")
    try:
        assert not gone, "the control tracer died too: the test would not see a missing pdeathsig"
    finally:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
