"""What ``ab`` and ``sweep`` share on the command line: options, the runner, the history, the
signal-stopped run, progress and the JSON output.

Both run probes in a row for seconds to minutes: fio is stopped at exit whatever happens
(``atexit``), SIGINT, SIGTERM and SIGHUP cancel the run so its ``finally`` blocks clean up, and
the probe files are removed before the command says how it ended (128 + the signal number when
stopped). Progress goes to stderr unless ``--quiet``; the result to stdout, a table or JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import atexit
import json
import signal
import sys
from collections.abc import Callable, Coroutine
from dataclasses import asdict
from pathlib import Path
from typing import Any, TextIO, TypeVar

from iotop_plus.commands.common import add_trace_option, run_cancellable
from iotop_plus.probe.history import ProbeHistory
from iotop_plus.probe.preflight import ExperimentError
from iotop_plus.probe.runner import ProbeRunner, stop_all_probes
from iotop_plus.probe.target import remove_all_probe_files
from iotop_plus.roots import Roots
from iotop_plus.state import chosen_state_dir
from iotop_plus.text import printable

T = TypeVar("T")


def add_target_option(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``--target PATH`` (required): what the probes run on."""
    parser.add_argument("--target", "-t", required=True, metavar="PATH", help=help_text)


def add_output_options(parser: argparse.ArgumentParser, set_help: str) -> None:
    """``--set KEY=VALUE``, ``--format``, ``--quiet`` and ``--no-trace``, in that order."""
    parser.add_argument(
        "--set", "-s", action="append", default=[], metavar="KEY=VALUE", help=set_help
    )
    parser.add_argument("--format", "-f", choices=("table", "json"), default="table")
    parser.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")
    add_trace_option(parser)


class ExperimentCli:
    """One run of an experiment from the command line (``ab`` or ``sweep``)."""

    def __init__(self, args: argparse.Namespace, experiment: str, label: str) -> None:
        self.args = args
        self.experiment = experiment
        """The experiment's key in the history and the JSON ("ab", "sweep")."""
        self.label = label
        """Its name in messages ("A/B", "sweep")."""
        self.quiet: bool = args.quiet

    @property
    def state_dir(self) -> Path:
        """The state directory (``--state-dir``, else the default)."""
        return chosen_state_dir(getattr(self.args, "state_dir", None))

    def progress(self, text: str) -> None:
        """One progress line on stderr, unless ``--quiet``."""
        if not self.quiet:
            print(text, file=sys.stderr, flush=True)

    def runner(self, roots: Roots) -> ProbeRunner:
        """The probe runner; fio is stopped at exit, whatever happens."""
        atexit.register(stop_all_probes)
        return ProbeRunner(roots, trace=self.args.trace)

    def history(self) -> ProbeHistory:
        """The probe history: each run is a result in ``probes.jsonl``, the experiment too."""
        return ProbeHistory.load(self.state_dir, keep=0)

    def run(
        self,
        coro: Coroutine[Any, Any, T],
        *,
        errors: tuple[type[Exception], ...] = (ExperimentError,),
        on_failure: Callable[[], None] = lambda: None,
        cleanup: Callable[[], None] = lambda: None,
    ) -> tuple[T | None, int] | None:
        """Run ``coro`` until done or stopped by a signal: (result, 0) or (None, signal number).

        A failure (one of ``errors``) is one line on stderr, then ``on_failure``: None. The
        probe files are removed and ``cleanup`` called in every case.
        """
        try:
            return asyncio.run(run_cancellable(coro))
        except errors as exc:
            print(f"iotop-plus: {self.label} failed: {printable(str(exc))}", file=sys.stderr)
            on_failure()
            return None
        finally:
            remove_all_probe_files()
            cleanup()

    def stopped(self, signum: int, detail: str = "") -> int:
        """Say which signal stopped the run; returns the exit code, 128 + its number."""
        print(
            f"iotop-plus: {self.label} stopped by {signal.Signals(signum).name}{detail}",
            file=sys.stderr,
        )
        return 128 + signum

    def record(self, history: ProbeHistory, result: Any) -> None:
        """Add the experiment to the history and pass on its notes."""
        history.add_experiment(self.experiment, result)
        for note in history.notes:
            print(f"iotop-plus: note: {note}", file=sys.stderr)

    def dump_json(self, result: Any, out: TextIO, **extra: object) -> None:
        """The result as JSON, with the tool and the experiment named."""
        doc = {"tool": "iotop-plus", "experiment": self.experiment, **asdict(result), **extra}
        json.dump(doc, out, indent=2)
        out.write("\n")
