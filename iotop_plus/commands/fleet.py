"""``iotop-plus fleet --prometheus URL``: many hosts' disks, through Prometheus.

Every figure is computed by PromQL on the server; this command only shows them. A host is the
``instance`` label. The TUI loads lazily; ``--once`` prints one query round as JSON instead.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import asdict

from iotop_plus.commands.common import EXIT_FAILURE, EXIT_OK, EXIT_USAGE, positive_float
from iotop_plus.roots import Roots
from iotop_plus.text import printable

_DURATION = re.compile(r"[1-9][0-9]{0,5}(ms|s|m|h)")


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Add the ``fleet`` subcommand to ``sub``."""
    p = sub.add_parser(
        "fleet",
        help="many hosts through Prometheus: hosts x devices, worst first",
        description="A TUI over the Prometheus HTTP API: every host (instance label) and "
        "device that `iotop-plus serve` exports, ranked by latency, %util and I/O pressure "
        "(rank 1 is the worst).",
    )
    p.add_argument("--prometheus", required=True, metavar="URL", help="e.g. http://prom:9090")
    p.add_argument(
        "--refresh",
        type=positive_float,
        default=15.0,
        metavar="S",
        help="seconds between query rounds (default 15)",
    )
    p.add_argument("--window", default="1m", metavar="DURATION", help="rate() window (default 1m)")
    p.add_argument(
        "--timeout",
        type=positive_float,
        default=10.0,
        metavar="S",
        help="seconds a whole query round may take, however slowly the server answers (default 10)",
    )
    p.add_argument(
        "--once", action="store_true", help="print one query round as JSON and exit (no TUI)"
    )
    p.set_defaults(run=run)


def run(args: argparse.Namespace, _roots: Roots) -> int:
    """Show the fleet from the Prometheus server (or, with ``--once``, one round as JSON); returns
    the exit code."""
    from iotop_plus.export.fleet import PrometheusClient, fleet_round

    if not _DURATION.fullmatch(args.window):
        print(
            f"iotop-plus: error: --window {printable(args.window)!r}: want e.g. 1m, 30s",
            file=sys.stderr,
        )
        return EXIT_USAGE
    try:
        client = PrometheusClient(args.prometheus, timeout=args.timeout)
    except ValueError as exc:
        print(f"iotop-plus: error: {printable(str(exc))}", file=sys.stderr)
        return EXIT_USAGE
    if args.once:
        result = fleet_round(client, args.window)
        doc = {
            "queried_at": result.queried_at,
            "elapsed_s": result.elapsed_s,
            "error": result.error,
            "hosts": sorted(result.hosts),
            "rows": [asdict(r) for r in result.rows],
        }
        json.dump(doc, sys.stdout, indent=1)
        print()
        return EXIT_FAILURE if result.error and not result.rows else EXIT_OK
    # The TUI is started by cli.py (commands never import Textual): args.fleet_tui.
    return int(args.fleet_tui(client, args.refresh, args.window))
