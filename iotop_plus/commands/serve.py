"""``iotop-plus serve``: the Prometheus exporter (or, with ``--textfile``, its file).

One sampler thread reads a frame per ``--interval``; scrapes read the latest one. Loopback by
default; another address prints a warning. ``--web-config`` adds TLS and basic auth in the
exporter-toolkit format. SIGTERM and SIGINT stop it cleanly (exit 0).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from typing import TYPE_CHECKING

from iotop_plus.commands.common import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, positive_float
from iotop_plus.commands.part_options import add_part_options, given_flags, wanted_keys
from iotop_plus.commands.workers import WorkerWatch
from iotop_plus.roots import Roots
from iotop_plus.sampling.files.part import FilesPart
from iotop_plus.sampling.frame import registry
from iotop_plus.text import printable

if TYPE_CHECKING:  # loaded only when serve runs
    from iotop_plus.export.collector import FrameCollector
    from iotop_plus.export.view import ExportSampler
    from iotop_plus.export.webconfig import WebConfig

DEFAULT_INTERVAL = 5.0
"""Seconds between frames: fresh enough for a 15 s scrape interval, cheap at 200 devices."""
DEFAULT_CGROUP_DEPTH = 4
"""Cgroups up to this many levels below the root are exported."""


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add the ``serve`` subcommand to ``sub``."""
    from iotop_plus.export.server import DEFAULT_LISTEN

    p = sub.add_parser(
        "serve",
        help="Prometheus exporter: disk counters, queue settings, pressure, cgroups, probes",
        description="Serve Prometheus metrics on GET /metrics (loopback only by default), or "
        "write them to a file for node_exporter's textfile collector with --textfile.",
    )
    p.add_argument(
        "--listen",
        default=DEFAULT_LISTEN,
        metavar="HOST:PORT",
        help=f"address to serve on (default {DEFAULT_LISTEN}; another than loopback warns)",
    )
    p.add_argument(
        "--web-config",
        metavar="FILE",
        help="TLS and basic auth, exporter-toolkit format (tls_server_config, basic_auth_users)",
    )
    p.add_argument(
        "--textfile",
        metavar="PATH",
        help="write the metrics to PATH (atomically, every interval) instead of listening",
    )
    p.add_argument(
        "--interval",
        "-i",
        type=positive_float,
        default=DEFAULT_INTERVAL,
        metavar="S",
        help=f"seconds between frames (default {DEFAULT_INTERVAL:g})",
    )
    p.add_argument(
        "--all",
        action="store_true",
        help="export every device (default: as the TUI, no partitions, loop, ram, zram or "
        "never-used devices)",
    )
    p.add_argument(
        "--latency",
        action="store_true",
        help="export latency histograms (iotop_plus_disk_request_duration_seconds) and queue "
        "time; needs root and bpftrace, and costs tracing every block request (off by "
        "default; without them, one line on stderr and everything else is exported)",
    )
    p.add_argument(
        "--cgroup-depth",
        type=_depth,
        default=DEFAULT_CGROUP_DEPTH,
        metavar="N",
        help="export per-cgroup I/O for cgroups up to N levels below the root "
        f"(default {DEFAULT_CGROUP_DEPTH})",
    )
    p.add_argument(
        "--no-cgroups",
        action="store_true",
        help="do not read or export per-cgroup I/O (each frame then skips the cgroup tree)",
    )
    p.add_argument(
        "--files",
        type=_count,
        default=0,
        metavar="N",
        help="export the N busiest files of each device "
        "(iotop_plus_file_{read,written,direct}_bytes_total{device,path}; default 0: none, "
        "since every path is a label)",
    )
    add_part_options(p, "export")
    p.set_defaults(run=run)


def _count(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"want a whole number of files, not {text!r}")
    return int(text)


def _depth(text: str) -> int:
    if not text.isdigit():
        raise argparse.ArgumentTypeError(f"want a whole number of levels, not {text!r}")
    return int(text)


def run(args: argparse.Namespace, roots: Roots) -> int:
    """Serve the metrics over HTTP (or write them to ``--textfile``) until SIGTERM or SIGINT;
    returns the exit code."""
    from iotop_plus.export.collector import FrameCollector
    from iotop_plus.export.server import ListenError, parse_listen
    from iotop_plus.export.view import ExportSampler
    from iotop_plus.export.webconfig import WebConfig, WebConfigError, load_web_config
    from iotop_plus.sampling.frame.model import LATENCY_QUEUE
    from iotop_plus.sampling.frame.sources import live_source
    from iotop_plus.sampling.health.gate import HEALTH
    from iotop_plus.state import StateDir, chosen_state_dir

    web = WebConfig()
    if args.web_config:
        if args.textfile:
            return _usage("--web-config has no meaning with --textfile")
        try:
            web = load_web_config(Path(args.web_config))
        except WebConfigError as exc:
            return _usage(str(exc))
    host, port = "", 0
    if not args.textfile:
        try:
            host, port = parse_listen(args.listen)
        except ListenError as exc:
            return _usage(str(exc))
    textfile = Path(args.textfile) if args.textfile else None
    if textfile is not None and not textfile.parent.is_dir():
        return _usage(f"--textfile {textfile}: {textfile.parent} is not a directory")

    stop = threading.Event()
    received: list[int] = []

    def on_signal(signum: int, _frame: object) -> None:
        received.append(signum)
        stop.set()

    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, on_signal)

    state = StateDir(chosen_state_dir(args.state_dir))
    # The journals' whole history (serve counts it all); health: a worker reads it, at most
    # one smartctl every 5 min a device; the verdict checks throttling as the TUI's does
    # (cheaply: only the limited cgroups, while the full cgroups are not read).
    # Blocked tasks always: iotop_plus_blocked_tasks and the verdict's blocked cause.
    source = live_source(
        roots,
        journal=state,
        journal_history=True,
        want=(HEALTH, "blocked"),
        throttles=True,
    )
    if args.latency:
        source.want(LATENCY_QUEUE, True)
    for key in wanted_keys(given_flags(args)):
        source.want(key, True)  # the registered parts of serve's own --FLAG options
    files = registry.part("files") if args.files else None
    if isinstance(files, FilesPart):
        files.export_top = args.files
        source.want(files.key, True)
    sampler = ExportSampler(
        source,
        args.interval,
        show_all=args.all,
        warn=_warn,
        cgroup_depth=None if args.no_cgroups else args.cgroup_depth,
    )
    collector = FrameCollector(sampler.view)
    sampler.on_view = collector.prerender  # every scrape of a known format is a cache hit
    with WorkerWatch(stop) as workers:
        if textfile is not None:
            code = _textfile_loop(sampler, collector, textfile, stop)
        else:
            code = _serve_http(args, host, port, web, sampler, collector, stop)
    return workers.exit_code(code, EXIT_FAILURE)


def _serve_http(
    args: argparse.Namespace,
    host: str,
    port: int,
    web: WebConfig,
    sampler: ExportSampler,
    collector: FrameCollector,
    stop: threading.Event,
) -> int:
    from iotop_plus.export.server import MetricsServer, is_loopback

    try:
        server = MetricsServer((host, port), collector, web)
    except OSError as exc:
        print(f"iotop-plus: error: cannot listen on {args.listen}: {exc.strerror}", file=sys.stderr)
        return EXIT_FAILURE
    if not is_loopback(host):
        print(
            f"iotop-plus: warning: serving on {args.listen}, reachable from other machines"
            + ("" if web.users else " without authentication (see --web-config)"),
            file=sys.stderr,
        )
    scheme = "https" if web.ssl_context is not None else "http"
    shown = f"[{host}]" if ":" in host else host
    print(f"iotop-plus: serving {scheme}://{shown}:{server.port}/metrics", file=sys.stderr)
    sys.stderr.flush()
    sampler.start()
    server.serve_in_thread()
    try:
        while not stop.wait(1.0):
            pass
    finally:
        server.shutdown()
        server.server_close()
        sampler.stop()
    return EXIT_OK


def _textfile_loop(
    sampler: ExportSampler,
    collector: FrameCollector,
    path: Path,
    stop: threading.Event,
) -> int:
    from iotop_plus.export.textfile import write_textfile

    sampler.schedule.start()  # the one schedule: no drift from the time each write takes
    while True:
        sampler.step()
        body, _ = collector.render(None)
        try:
            write_textfile(path, body)
        except OSError as exc:
            print(
                f"iotop-plus: error: cannot write {printable(str(path))}: {exc.strerror or exc}",
                file=sys.stderr,
            )
            return EXIT_FAILURE
        if not sampler.schedule.wait(stop):
            sampler.stop()
            return EXIT_OK


def _warn(message: str) -> None:
    print(f"iotop-plus: warning: {printable(message)}", file=sys.stderr, flush=True)


def _usage(message: str) -> int:
    print(f"iotop-plus: error: {printable(message)}", file=sys.stderr)
    return EXIT_USAGE
